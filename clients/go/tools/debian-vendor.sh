#!/bin/sh
# Builds clients/go/vendor/ from Debian's packaged Go sources, so that
# `go build`, `go test` and `go vet` run without the Go module proxy:
#   apt-get install golang-go golang-github-gomodule-redigo-dev golang-github-mna-redisc-dev
#   clients/go/tools/debian-vendor.sh && cd clients/go && go test ./...
# The vendor directory holds symbolic links into /usr/share/gocode/src and a
# modules.txt naming the versions go.mod requires; it is not committed.
# (A go.mod `replace` to the packaged source is not enough: Debian's redisc
# ships no go.mod, which a replacement directory must have.)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
src=${GOCODE:-/usr/share/gocode/src}
for d in github.com/gomodule/redigo/redis github.com/mna/redisc; do
  if [ ! -d "$src/$d" ]; then
    echo "debian-vendor.sh: $src/$d is missing: apt-get install golang-github-gomodule-redigo-dev golang-github-mna-redisc-dev" >&2
    exit 1
  fi
done
version() { sed -n "s|^\t$1 \(v[^ ]*\)\$|\1|p" "$here/go.mod"; }
rm -rf "$here/vendor"
mkdir -p "$here/vendor/github.com/gomodule" "$here/vendor/github.com/mna"
ln -s "$src/github.com/gomodule/redigo" "$here/vendor/github.com/gomodule/redigo"
ln -s "$src/github.com/mna/redisc" "$here/vendor/github.com/mna/redisc"
cat > "$here/vendor/modules.txt" <<MODULES
# github.com/gomodule/redigo $(version github.com/gomodule/redigo)
## explicit
github.com/gomodule/redigo/redis
# github.com/mna/redisc $(version github.com/mna/redisc)
## explicit
github.com/mna/redisc
MODULES
