#!/usr/bin/env bash
# tools/build.sh demo|test
#   Installs the Debian packages pathlock needs (only those missing), builds
#   into ./build, then runs the demo on the embedded backend (demo) or the
#   whole test suite, which starts its own redis-server (test).
#   demo builds only the `pathlock` command; test builds everything.
#   Parallel jobs: $PATHLOCK_JOBS, else $CMAKE_BUILD_PARALLEL_LEVEL, else nproc.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in demo|test) ;; *) echo "usage: tools/build.sh demo|test" >&2; exit 2 ;; esac

packages=(cmake g++ make pkg-config libhiredis-dev nlohmann-json3-dev catch2 libfmt-dev redis-server gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=${PATHLOCK_JOBS:-${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}}
case "$jobs" in ''|*[!0-9]*|0) echo "PATHLOCK_JOBS / CMAKE_BUILD_PARALLEL_LEVEL must be a positive number, got '$jobs'" >&2; exit 2 ;; esac

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPATHLOCK_WERROR=ON >/dev/null

if [ "$mode" = demo ]; then
  cmake --build build -j"$jobs" --target pathlock_cli
  exec build/bin/pathlock demo
fi
cmake --build build -j"$jobs"
cd build
exec ctest --output-on-failure
