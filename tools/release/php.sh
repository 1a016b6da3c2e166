#!/bin/sh
# tools/release/php.sh DIST_DIR: the composer package of the PHP client
# (docs/php.md), DIST_DIR/composer/pathlock-pathlock-VERSION.zip, for a
# composer "artifact" repository:
#   "repositories": [{"type": "artifact", "url": "DIST_DIR/composer"}]
#   composer require pathlock/pathlock
# The zip holds composer.json (name, MIT license, version), LICENSE,
# README.md, src/ and bin/ (no tests, benchmark or examples), and the
# default matrix's Functions library as library/pathlock_library.lua
# (Library::bundled(); taken from PATHLOCK_LIBRARY, which tools/release.sh
# sets, else the C++ build's file); its files are the ones git tracks, dated
# 1980-01-01, so the same checkout gives the same bytes. The script fails if
# composer.json's version is not VERSION's.
set -eu
dist=${1:?usage: tools/release/php.sh DIST_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$dist/composer"
out=$(cd "$dist/composer" && pwd)
version=$(cat "$root/VERSION")
: "${PATHLOCK_LIBRARY:=$root/build/pathlock_matrix/pathlock_cloud_drive/redis/pathlock_library.lua}"
if [ ! -f "$PATHLOCK_LIBRARY" ]; then
  echo "error: no Functions library at $PATHLOCK_LIBRARY: build the C++ target pathlock_cloud_drive_generate first, or set PATHLOCK_LIBRARY" >&2
  exit 1
fi
zip="$out/pathlock-pathlock-$version.zip"
cd "$root/clients/php"
git ls-files -z composer.json LICENSE README.md src bin |
/usr/bin/python3 -c '
import json, sys, zipfile
zip_path, version, library = sys.argv[1], sys.argv[2], sys.argv[3]
meta = json.load(open("composer.json", encoding="utf-8"))
if meta.get("version") != version or meta.get("license") != "MIT":
    sys.exit("php.sh: composer.json has version %s and license %s; VERSION is %s, the license MIT"
             % (meta.get("version"), meta.get("license"), version))
names = sorted(n for n in sys.stdin.buffer.read().decode().split("\0") if n)
with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
    for name in names:
        info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
        info.external_attr = (0o755 if name.startswith("bin/") else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, open(name, "rb").read())
    info = zipfile.ZipInfo("library/pathlock_library.lua", (1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, open(library, "rb").read())
' "$zip" "$version" "$PATHLOCK_LIBRARY"
echo "$zip"
