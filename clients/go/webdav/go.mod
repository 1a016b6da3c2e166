module pathlock.dev/pathlock/webdav

go 1.19

require (
	golang.org/x/net v0.7.0
	pathlock.dev/pathlock v1.0.0
)

require (
	github.com/gomodule/redigo v1.8.3 // indirect
	github.com/mna/redisc v1.1.7 // indirect
)

// Development: the core client of this checkout. A release replaces it with
// the published version (tools/release/go.sh).
replace pathlock.dev/pathlock => ../
