#!/bin/sh
# Builds clients/go/webdav/vendor/ from Debian's packaged Go sources and the
# core client of this checkout, so that `go build`, `go test` and `go vet`
# run without the Go module proxy:
#   apt-get install golang-go golang-github-gomodule-redigo-dev \
#     golang-github-mna-redisc-dev golang-golang-x-net-dev
#   clients/go/webdav/tools/debian-vendor.sh && cd clients/go/webdav && GOFLAGS=-mod=vendor go test ./...
# The vendor directory holds symbolic links and a modules.txt naming the
# versions go.mod requires; it is not committed (clients/go/.gitignore).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
src=${GOCODE:-/usr/share/gocode/src}
for d in github.com/gomodule/redigo/redis github.com/mna/redisc golang.org/x/net/webdav; do
  if [ ! -d "$src/$d" ]; then
    echo "debian-vendor.sh: $src/$d is missing: apt-get install golang-github-gomodule-redigo-dev golang-github-mna-redisc-dev golang-golang-x-net-dev" >&2
    exit 1
  fi
done
version() { sed -n "s|^\t$1 \(v[^ ]*\).*\$|\1|p" "$here/go.mod"; }
rm -rf "$here/vendor"
mkdir -p "$here/vendor/github.com/gomodule" "$here/vendor/github.com/mna" "$here/vendor/golang.org/x/net" \
         "$here/vendor/pathlock.dev"
ln -s "$src/github.com/gomodule/redigo" "$here/vendor/github.com/gomodule/redigo"
ln -s "$src/github.com/mna/redisc" "$here/vendor/github.com/mna/redisc"
ln -s "$src/golang.org/x/net/webdav" "$here/vendor/golang.org/x/net/webdav"
# The core client's package: its non-test .go files, linked one by one (a
# link to the whole folder would hold this module as well).
mkdir "$here/vendor/pathlock.dev/pathlock"
for f in "$here"/../*.go; do
  case "$f" in *_test.go) continue ;; esac
  ln -s "$f" "$here/vendor/pathlock.dev/pathlock/"
done
cp -R "$here/../library" "$here/vendor/pathlock.dev/pathlock/library"  # go:embed takes no symlinks
cat > "$here/vendor/modules.txt" <<MODULES
# github.com/gomodule/redigo $(version github.com/gomodule/redigo)
## explicit
github.com/gomodule/redigo/redis
# github.com/mna/redisc $(version github.com/mna/redisc)
## explicit
github.com/mna/redisc
# golang.org/x/net $(version golang.org/x/net)
## explicit; go 1.17
golang.org/x/net/webdav
golang.org/x/net/webdav/internal/xml
# pathlock.dev/pathlock $(version pathlock.dev/pathlock) => ../
## explicit; go 1.19
pathlock.dev/pathlock
# pathlock.dev/pathlock => ../
MODULES
