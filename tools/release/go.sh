#!/usr/bin/env bash
# tools/release/go.sh DIST_DIR          (docs/go.md "Publishing the module")
#   Writes DIST_DIR/goproxy/, a folder in the layout of the Go module proxy
#   protocol (<module>/@v/list, <version>.info, .mod, .zip), holding
#     pathlock.dev/pathlock@v$(cat VERSION)   clients/go, with its LICENSE and the
#                                             shipped matrix's library ($PATHLOCK_LIBRARY,
#                                             else the C++ build's) in library/
#     pathlock.dev/pathlock/webdav@v<same>    clients/go/webdav (the WebDAV lock system and
#                                             cmd/pathlock-webdav), its go.mod requiring
#                                             pathlock.dev/pathlock v<same> (no replace), with
#                                             matrix/webdav.json's library ($PATHLOCK_WEBDAV_LIBRARY,
#                                             else the C++ build's) in library/
#     the modules clients/go/go.mod requires  (redigo, redisc) and golang.org/x/net (which
#                                             clients/go/webdav/go.mod requires) at the
#                                             versions they name, zipped from Debian's
#                                             packaged sources
#   so that, with no network, in any Go module:
#     GOPROXY=file://DIST_DIR/goproxy GOSUMDB=off go get pathlock.dev/pathlock@v<version>
#   and anywhere:
#     GOPROXY=file://DIST_DIR/goproxy GOSUMDB=off go install pathlock.dev/pathlock/webdav/cmd/pathlock-webdav@v<version>
#   Published as it is at https://pathlock.dev/goproxy (served by the
#   go-import meta tag "pathlock.dev/pathlock mod https://pathlock.dev/goproxy"),
#   the same pathlock zip is what the public proxy and checksum database see.
#   Prints the folder on stdout. Needs git, zip, dpkg-query and
#   golang-github-gomodule-redigo-dev, golang-github-mna-redisc-dev, golang-golang-x-net-dev
#   ($GOCODE: another folder of Go sources than /usr/share/gocode/src).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: tools/release/go.sh DIST_DIR" >&2; exit 2; }
for tool in git zip dpkg-query; do
  command -v "$tool" >/dev/null || { echo "go.sh: $tool is missing" >&2; exit 1; }
done
mkdir -p "$1"
proxy=$(cd "$1" && pwd)/goproxy
gocode=${GOCODE:-/usr/share/gocode/src}
version=v$(tr -d '[:space:]' < "$root/VERSION")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$proxy"

# The proxy protocol's case encoding: every capital letter becomes ! and
# its small letter.
escape() { printf '%s' "$1" | sed 's/[A-Z]/!\L&/g'; }

# required MODULE [GOMOD]: the version GOMOD (default clients/go/go.mod) requires.
required() {
  local v gomod=${2:-clients/go/go.mod}
  v=$(sed -n "s|^[[:space:]]*\(require[[:space:]]\+\)\{0,1\}$1 \(v[^ ]*\).*|\2|p" "$root/$gomod")
  [ -n "$v" ] || { echo "go.sh: $gomod requires no $1" >&2; exit 1; }
  printf '%s' "$v"
}

# publish MODULE VERSION STAGE EPOCH: the .zip of the files under STAGE
# (already in place as MODULE@VERSION/...), the .mod (its go.mod, or the
# line a module without one gets), the .info and the list.
publish() {
  local module=$1 v=$2 stage=$3 epoch=$4 dir top
  dir=$proxy/$(escape "$module")/@v
  top=$module@$v
  mkdir -p "$dir"
  if [ -f "$stage/$top/go.mod" ]; then
    cp "$stage/$top/go.mod" "$dir/$v.mod"
  else
    printf 'module %s\n' "$module" > "$dir/$v.mod"
  fi
  find "$stage" -exec touch -h -d "@$epoch" {} +
  (cd "$stage" && find "$top" -type f -print | LC_ALL=C sort | TZ=UTC zip -q -X -D "$dir/$v.zip" -@)
  printf '{"Version":"%s","Time":"%s"}\n' "$v" "$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)" > "$dir/$v.info"
  printf '%s\n' "$v" >> "$dir/list"
  echo "go.sh: $top" >&2
}

# pathlock.dev/pathlock: the files git tracks in clients/go (no vendor/, and
# not the nested module clients/go/webdav: a module zip holds no other
# module's go.mod).
pathlock_module() {
  local module top epoch
  module=$(sed -n 's/^module[[:space:]]\+\([^[:space:]]*\).*/\1/p' "$root/clients/go/go.mod")
  [ "$module" = pathlock.dev/pathlock ] || { echo "go.sh: clients/go/go.mod names module '$module'" >&2; exit 1; }
  grep -q "^const Version = \"${version#v}\"\$" "$root/clients/go/client.go" ||
    { echo "go.sh: clients/go/client.go's Version is not ${version#v} (VERSION)" >&2; exit 1; }
  [ -f "$root/clients/go/LICENSE" ] || { echo "go.sh: clients/go/LICENSE is missing" >&2; exit 1; }
  top=$work/pathlock/$module@$version
  mkdir -p "$top"
  (cd "$root/clients/go" && git ls-files -z --cached -- . ':!vendor' ':!webdav' | xargs -0 cp --parents -t "$top")
  [ -f "$top/LICENSE" ] || { echo "go.sh: git does not track clients/go/LICENSE" >&2; exit 1; }
  # The shipped matrix's Functions library, for pathlock.DefaultLibrary().
  local library=${PATHLOCK_LIBRARY:-$root/build/pathlock_matrix/pathlock_cloud_drive/redis/pathlock_library.lua}
  [ -f "$library" ] || { echo "go.sh: no Functions library at $library: build the C++ target" \
    "pathlock_cloud_drive_generate first, or set PATHLOCK_LIBRARY" >&2; exit 1; }
  cp "$library" "$top/library/pathlock_library.lua"
  epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
  publish "$module" "$version" "$work/pathlock" "$epoch"
}

# pathlock.dev/pathlock/webdav: the files git tracks in clients/go/webdav,
# its LICENSE (the core module's), matrix/webdav.json's Functions library in
# library/ (for webdav.Library()), and a go.mod that requires the core
# module at this version instead of replacing it with the checkout.
webdav_module() {
  local module=pathlock.dev/pathlock/webdav dir=clients/go/webdav top epoch m
  grep -q "^module $module\$" "$root/$dir/go.mod" ||
    { echo "go.sh: $dir/go.mod does not name module $module" >&2; exit 1; }
  for m in github.com/gomodule/redigo github.com/mna/redisc; do
    [ "$(required "$m" "$dir/go.mod")" = "$(required "$m")" ] ||
      { echo "go.sh: $dir/go.mod and clients/go/go.mod require different versions of $m" >&2; exit 1; }
  done
  top=$work/webdav/$module@$version
  mkdir -p "$top/library"
  (cd "$root/$dir" && git ls-files -z --cached -- . ':!vendor' | xargs -0 cp --parents -t "$top")
  cp "$root/clients/go/LICENSE" "$top/LICENSE"
  local library=${PATHLOCK_WEBDAV_LIBRARY:-${PATHLOCK_RELEASE_BUILD:-$root/build}/pathlock_matrix/pathlock_webdav/redis/pathlock_library.lua}
  [ -f "$library" ] || { echo "go.sh: no WebDAV Functions library at $library: build the C++ target" \
    "pathlock_webdav_library first, or set PATHLOCK_WEBDAV_LIBRARY" >&2; exit 1; }
  cp "$library" "$top/library/pathlock_library.lua"
  # The development replace (from its comment to the end) goes; the core
  # module is required at the version published beside it.
  sed -i -e '/^\/\/ Development: /,$d' \
         -e "s|^\([[:space:]]*\(require[[:space:]]\+\)\{0,1\}pathlock.dev/pathlock\) v[^ ]*|\1 $version|" "$top/go.mod"
  ! grep -q '^replace' "$top/go.mod" || { echo "go.sh: $dir/go.mod keeps a replace directive" >&2; exit 1; }
  grep -q "pathlock.dev/pathlock $version\$" "$top/go.mod" ||
    { echo "go.sh: $dir/go.mod: cannot require pathlock.dev/pathlock $version" >&2; exit 1; }
  epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
  publish "$module" "$version" "$work/webdav" "$epoch"
}

# license_of PACKAGE: Debian's copyright file, and the full text of each
# common license it refers to.
license_of() {
  local doc=/usr/share/doc/$1/copyright lic
  [ -f "$doc" ] || { echo "go.sh: $doc is missing" >&2; exit 1; }
  cat "$doc"
  for lic in $(grep -o '/usr/share/common-licenses/[A-Za-z0-9.+-]*' "$doc" | sort -u); do
    printf '\n%s:\n\n' "${lic##*/}"
    cat "$lic"
  done
}

# dependency MODULE PACKAGE [GOMOD]: the Debian package's sources of MODULE,
# which must be the version GOMOD (default clients/go/go.mod) requires; every regular file but those of a
# nested module, with a LICENSE made from Debian's copyright file when the
# sources carry none.
dependency() {
  local module=$1 package=$2 v src have top nested
  v=$(required "$module" "${3:-clients/go/go.mod}")
  src=$gocode/$module
  [ -d "$src" ] || { echo "go.sh: $src is missing: apt-get install $package" >&2; exit 1; }
  have=$(dpkg-query -W -f='${Version}' "$package")
  have=${have#*:}  # epoch, then upstream version; Debian's revision and repack suffix (+dfsg) go
  [ "v${have%%[-+]*}" = "$v" ] ||
    { echo "go.sh: $package is version $have; ${3:-clients/go/go.mod} requires $module $v" >&2; exit 1; }
  top=$work/$package/$module@$v
  mkdir -p "$top"
  nested=$(cd "$src" && find . -mindepth 2 -name go.mod -printf '%h\n')
  (cd "$src" && find . -type f ! -path '*/vendor/*' -print0 | xargs -0 cp --parents -t "$top")
  for d in $nested; do rm -rf "${top:?}/$d"; done
  if ! ls "$top" | grep -qiE '^(LICENSE|COPYING)'; then
    license_of "$package" > "$top/LICENSE"
  fi
  publish "$module" "$v" "$work/$package" "$(stat -c %Y "$src")"
}

# h1 FILE: the go.sum hash of a go.mod file (the module's directory hash of
# its one file, "go.mod").
h1() {
  python3 -c 'import base64, hashlib, sys
line = "%s  go.mod\n" % hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()
print("h1:" + base64.b64encode(hashlib.sha256(line.encode()).digest()).decode())' "$1"
}

# graph_mod MODULE VERSION H1: a .mod (read from stdin) and an .info
# without a time, no zip, for a module the go command needs in the module
# graph but never builds: redigo's go.mod (go 1.14, so not pruned) requires
# testify, whose requirements follow. The text is the upstream go.mod, byte
# for byte: H1 is its published go.sum hash, checked here.
graph_mod() {
  local dir
  dir=$proxy/$(escape "$1")/@v
  mkdir -p "$dir"
  cat > "$dir/$2.mod"
  [ "$(h1 "$dir/$2.mod")" = "$3" ] || { echo "go.sh: $1@$2's go.mod is not the published one ($3)" >&2; exit 1; }
  printf '{"Version":"%s"}\n' "$2" > "$dir/$2.info"
  printf '%s\n' "$2" >> "$dir/list"
}

# The module graph beyond what is built: testify v1.5.1 (redigo v1.8.3's
# requirement) and the requirements of its go.mod.
module_graph() {
  graph_mod github.com/stretchr/testify v1.5.1 h1:5W2xD1RspED5o8YsWQXVCued0rvSQ+mT+I5cxcmMvtA= <<'MOD'
module github.com/stretchr/testify

require (
	github.com/davecgh/go-spew v1.1.0
	github.com/pmezard/go-difflib v1.0.0
	github.com/stretchr/objx v0.1.0
	gopkg.in/yaml.v2 v2.2.2
)

go 1.13
MOD
  graph_mod gopkg.in/yaml.v2 v2.2.2 h1:hI93XBmqTisBFMUTm0b8Fm+jr3Dg1NNxqwp+5A1VGuI= <<'MOD'
module "gopkg.in/yaml.v2"

require (
	"gopkg.in/check.v1" v0.0.0-20161208181325-20d25e280405
)
MOD
  graph_mod github.com/davecgh/go-spew v1.1.0 h1:J7Y8YcW2NihsgmVo/mv3lAwl/skON4iLHjSsI+c5H38= <<<'module github.com/davecgh/go-spew'
  graph_mod github.com/pmezard/go-difflib v1.0.0 h1:iKH77koFhYxTK1pcRnkKkqfTogsbg7gZNVY4sRDYZ/4= <<<'module github.com/pmezard/go-difflib'
  graph_mod github.com/stretchr/objx v0.1.0 h1:HFkY916IF+rwdDfMAkV7OtwuqBVzrE8GR6GFx+wExME= <<<'module github.com/stretchr/objx'
  graph_mod gopkg.in/check.v1 v0.0.0-20161208181325-20d25e280405 h1:Co6ibVJAznAaIkqp8huTwlJQCZ016jof/cbN4VW5Yz0= <<<'module gopkg.in/check.v1'
}

pathlock_module
webdav_module
dependency github.com/gomodule/redigo golang-github-gomodule-redigo-dev
dependency github.com/mna/redisc golang-github-mna-redisc-dev
dependency golang.org/x/net golang-golang-x-net-dev clients/go/webdav/go.mod
module_graph
echo "$proxy"
