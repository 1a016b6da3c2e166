#!/usr/bin/env bash
# clients/python/make-deb.sh BUILD_DIR [OUT_DIR]
#   Packs the Python package a build tree assembled (BUILD_DIR/python/pathlock,
#   made with PATHLOCK_BUILD_PYTHON=ON) into python3-pathlock_VERSION_ARCH.deb
#   in OUT_DIR (default: BUILD_DIR): the files under
#   /usr/lib/python3/dist-packages/pathlock/, Depends from dpkg-shlibdeps on
#   the extension and the Python version it was built for (docs/python.md).
#   Needs dpkg-dev. Prints the path of the package.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: clients/python/make-deb.sh BUILD_DIR [OUT_DIR]" >&2; exit 2; }
build=$(cd "$1" && pwd)
out=$(cd "${2:-$1}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
pkg="$build/python/pathlock"
so=$(ls "$pkg"/_pathlock*.so 2>/dev/null | head -n1 || true)
[ -n "$so" ] || { echo "no $pkg/_pathlock*.so: build the target pathlock_python first" >&2; exit 1; }

version=$(cat "$src/VERSION")   # the one place of the version
arch=$(dpkg --print-architecture)
# The Python the module was built for: cpython-311-... -> 3.11.
pyver=$(basename "$so" | sed -n 's/.*cpython-\([0-9]\)\([0-9]*\)-.*/\1.\2/p')
[ -n "$pyver" ] || { echo "cannot tell the Python version of $so" >&2; exit 1; }
next="${pyver%.*}.$((${pyver#*.} + 1))"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
dest="$root/usr/lib/python3/dist-packages/pathlock"
mkdir -p "$dest" "$root/DEBIAN" "$root/usr/share/doc/python3-pathlock"
cp "$pkg"/*.py "$pkg"/*.pyi "$pkg"/py.typed "$dest/"
install -m 644 "$so" "$dest/"
strip --strip-unneeded "$dest/$(basename "$so")"
cp "$src/docs/python.md" "$root/usr/share/doc/python3-pathlock/"
cp "$src/LICENSE" "$root/usr/share/doc/python3-pathlock/copyright"   # Debian's place of the license (MIT)

# dpkg-shlibdeps wants a debian/control beside it.
mkdir -p "$work/debian"
printf 'Source: pathlock\n\nPackage: python3-pathlock\nArchitecture: any\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "$dest/$(basename "$so")" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')

cat > "$root/DEBIAN/control" <<CONTROL
Package: python3-pathlock
Version: $version
Architecture: $arch
Section: python
Priority: optional
Maintainer: pathlock maintainers <dev@pathlock.invalid>
Depends: python3 (>= $pyver), python3 (<< $next), $shlibs
Suggests: redis-server
Description: Path locks for file-management services (Python)
 The pathlock C++ engine bound for Python: which operations on a tree of
 folders may run at the same time, embedded or shared through Redis, with
 a lease keeper, run-time matrices and asyncio. See
 /usr/share/doc/python3-pathlock/python.md.
CONTROL
deb="$out/python3-pathlock_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
