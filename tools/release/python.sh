#!/bin/sh
# tools/release/python.sh DIST_DIR: the Python wheel of pathlock
# (docs/python.md), built offline from this checkout with Debian's toolchain
# (python3-pip, python3-setuptools, python3-wheel, pybind11-dev, cmake, g++)
# and written into DIST_DIR as pathlock-VERSION-cpXY-cpXY-linux_ARCH.whl.
# The wheel carries the MIT license (pathlock-VERSION.dist-info/LICENSE);
# the script fails if it does not.
#
# PYTHON names the interpreter the wheel is built for (default
# /usr/bin/python3). The extension's CMake build folder is
# clients/python/build/ (git ignores it), so a second run is incremental;
# CMAKE_CXX_COMPILER_LAUNCHER=ccache and PATHLOCK_JOBS=N are honoured.
set -eu
dist=${1:?usage: tools/release/python.sh DIST_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
version=$(cat "$root/VERSION")
rm -f "$dist"/pathlock-"$version"-*.whl
cd "$root"
"$python" -m pip wheel --no-build-isolation --no-deps --no-index --disable-pip-version-check \
    -w "$dist" ./clients/python >&2
set -- "$dist"/pathlock-"$version"-*.whl
[ -f "$1" ] || { echo "python.sh: no wheel pathlock-$version-*.whl in $dist" >&2; exit 1; }
"$python" - "$1" "$version" <<'PY'
import sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
names = zipfile.ZipFile(wheel).namelist()
license = f"pathlock-{version}.dist-info/LICENSE"
if license not in names:
    sys.exit(f"python.sh: {wheel} lacks {license}")
if not any(n.startswith("pathlock/_pathlock") and n.endswith(".so") for n in names):
    sys.exit(f"python.sh: {wheel} lacks the extension module")
PY
echo "$1"
