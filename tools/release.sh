#!/usr/bin/env bash
# tools/release.sh [--build-dir DIR] [DIST_DIR]      (docs/release.md)
#   Writes a release of this checkout into DIST_DIR (default ./dist):
#     pathlock_<version>_<arch>.deb     CPack's Debian package (docs/packaging.md)
#     redis/<matrix>.lua, <matrix>.json the Functions library of each matrix
#                                       under matrix/ and its metadata
#     what tools/release/{python,node,php,go}.sh write, for each that exists
#     SHA256SUMS                        every other file, `sha256sum -c` from DIST_DIR
#   Without --build-dir it configures and builds ./build-release (Release,
#   no tests, tools or Python module: only what the package holds). With
#   --build-dir DIR it packages an already configured and built tree (the
#   test suite's fixture release_dist does this; CPack still builds what is
#   out of date there).
#   DIST_DIR must be empty, absent, or a former release (it holds
#   SHA256SUMS): then its contents are replaced.
#   Needs cmake, g++, dpkg-dev (dpkg-shlibdeps), redis-server and redis-cli
#   (each library is loaded once into a private redis-server, which answers
#   its metadata), python3. Parallel jobs: $PATHLOCK_JOBS, else nproc.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() { echo "usage: tools/release.sh [--build-dir DIR] [DIST_DIR]" >&2; exit 2; }
build=""
dist=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --build-dir=*) build=${1#--build-dir=}; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) [ -z "$dist" ] || usage; dist=$1; shift ;;
  esac
done
dist=${dist:-$root/dist}
jobs=${PATHLOCK_JOBS:-$(nproc)}
for tool in cmake cpack dpkg-deb dpkg-shlibdeps redis-server redis-cli python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "release.sh: $tool is missing (docs/release.md lists what it needs)" >&2; exit 1; }
done

# The output folder: empty, or a former release whose contents go.
if [ -d "$dist" ] && [ -n "$(ls -A "$dist")" ]; then
  if [ ! -f "$dist/SHA256SUMS" ]; then
    echo "release.sh: $dist is not empty and holds no former release (no SHA256SUMS); give an empty folder" >&2
    exit 1
  fi
  find "$dist" -mindepth 1 -delete
fi
mkdir -p "$dist/redis"
dist=$(cd "$dist" && pwd)

# 1. The build: the package's targets only.
if [ -z "$build" ]; then
  build=$root/build-release
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPATHLOCK_BUILD_TESTS=OFF -DPATHLOCK_BUILD_TOOLS=OFF \
        -DPATHLOCK_BUILD_PYTHON=OFF -DPATHLOCK_CLI_MATRIX_JSON=/usr/share/pathlock/matrix/cloud-drive.json >/dev/null
fi
[ -f "$build/CPackConfig.cmake" ] || { echo "release.sh: $build is not a configured pathlock build (no CPackConfig.cmake)" >&2; exit 1; }
build=$(cd "$build" && pwd)
cmake --build "$build" -j"$jobs" --target pathlock pathlock_matrix_model pathlock_cli pathlock-matrixc \
      pathlock_test_vectors pathlock_matrix_libraries

# 2. The Debian package (CPack writes its work folder beside the package, so
#    into a temporary folder first).
work=$(mktemp -d)
redis_pid=""
cleanup() {
  [ -z "$redis_pid" ] || kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$build" && cpack -G DEB -B "$work/cpack" >/dev/null)
cp "$work"/cpack/*.deb "$dist/"

# 3. Each matrix's Functions library, as the package holds it, with its
#    metadata as the library's own info function answers it.
redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no --dir "$work" \
             --logfile "$work/redis.log" &
redis_pid=$!
for _ in $(seq 200); do
  redis-cli -s "$work/redis.sock" PING >/dev/null 2>&1 && break
  kill -0 "$redis_pid" 2>/dev/null || { cat "$work/redis.log" >&2; exit 1; }
  sleep 0.05
done
for lua in "$build"/matrix-libraries/*.lua; do
  name=$(basename "$lua" .lua)
  cp "$lua" "$dist/redis/$name.lua"
  redis-cli -s "$work/redis.sock" FUNCTION FLUSH >/dev/null
  loaded=$(redis-cli -s "$work/redis.sock" -x FUNCTION LOAD < "$dist/redis/$name.lua")
  prefix=$(redis-cli -s "$work/redis.sock" --json FUNCTION LIST LIBRARYNAME "$loaded" |
           python3 -c 'import json,sys; fs=[f["name"] for l in json.load(sys.stdin) for f in l["functions"] if f["name"].endswith("_info")]; print(fs[0][:-len("info")] if len(fs)==1 else "")')
  [ -n "$prefix" ] || { echo "release.sh: $name.lua loaded as '$loaded' has no info function" >&2; exit 1; }
  redis-cli -s "$work/redis.sock" --json FCALL_RO "${prefix}info" 0 |
    python3 -c '
import json, sys
reply, prefix, version, path = json.load(sys.stdin), sys.argv[1], sys.argv[2], sys.argv[3]
tag, library, matrix, matrix_version, fingerprint, layout, pathlock_version = reply
if tag != "info" or pathlock_version != version:
    sys.exit(f"release.sh: {path}: info answered {reply}, this release is {version}")
meta = {"library": library, "function_prefix": prefix, "matrix": matrix, "matrix_version": matrix_version,
        "fingerprint": fingerprint, "layout": layout, "pathlock_version": pathlock_version,
        "file": path.rsplit("/", 1)[-1]}
with open(path[:-len(".lua")] + ".json", "w", encoding="utf-8") as f:
    json.dump(meta, f, indent=2)
    f.write("\n")
' "$prefix" "$(cat "$root/VERSION")" "$dist/redis/$name.lua"
done
kill "$redis_pid"
wait "$redis_pid" 2>/dev/null || true
redis_pid=""

# 4. The clients' artifacts (tools/release/README.md: what each script is given).
export PATHLOCK_RELEASE_LUA="$dist/redis/cloud-drive.lua"
export PATHLOCK_RELEASE_META="$dist/redis/cloud-drive.json"
export PATHLOCK_RELEASE_BUILD="$build"
export PATHLOCK_LIBRARY="${PATHLOCK_LIBRARY:-$PATHLOCK_RELEASE_LUA}"
export PATHLOCK_WEBDAV_LIBRARY="${PATHLOCK_WEBDAV_LIBRARY:-$dist/redis/webdav.lua}"  # go.sh: the webdav module's
for client in python node php go; do
  script=$root/tools/release/$client.sh
  [ -f "$script" ] || continue
  echo "release.sh: $client" >&2
  bash "$script" "$dist" >&2
done

# 5. Checksums of every file.
(cd "$dist" && find . -type f ! -name SHA256SUMS -printf '%P\n' | LC_ALL=C sort | xargs -r -d '\n' sha256sum > SHA256SUMS)
echo "$dist"
