module pathlock.dev/pathlock

go 1.19

require (
	github.com/gomodule/redigo v1.8.3
	github.com/mna/redisc v1.1.7
)
