#!/usr/bin/env bash
# tools/build.sh demo|test|asan|tsan
#   Installs the Debian packages pathlock needs (only those missing), builds
#   into ./build, then runs the demo on the embedded backend (demo) or the
#   whole test suite, which starts its own redis-server (test).
#   demo builds only the `pathlock` command; test builds everything.
#   asan / tsan: the whole suite once more, built into ./build-asan with
#   AddressSanitizer + UndefinedBehaviorSanitizer, or into ./build-tsan with
#   ThreadSanitizer (a report fails its test). For developers, not CI: each
#   takes about twice as long as test. packaging_consumers is left out (its
#   consumer projects are built without the sanitizer runtime).
#   Parallel jobs: $PATHLOCK_JOBS, else $CMAKE_BUILD_PARALLEL_LEVEL, else nproc.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case "$mode" in demo|test|asan|tsan) ;; *) echo "usage: tools/build.sh demo|test|asan|tsan" >&2; exit 2 ;; esac

# demo: what configuring the tree and building the `pathlock` command need
# (the C++ core with its Redis, PostgreSQL and metrics-server parts; catch2,
# libvalijson-dev, libutf8proc-dev and unicode-data are what the configure
# step of the test folder asks for: two header-only libraries, the name
# folding's Unicode library and the Unicode Character Database it is tested
# against). The other modes: everything the whole suite runs.
packages=(cmake g++ make pkg-config libhiredis-dev libssl-dev nlohmann-json3-dev libfmt-dev libcpp-httplib-dev libpq-dev
          catch2 libvalijson-dev libutf8proc-dev unicode-data)
if [ "$mode" != demo ]; then
  packages+=(openssl redis-server gnuplot-nox
          python3-dev python3-setuptools python3-pytest python3-pip python3-wheel pybind11-dev chromium chromium-driver python3-selenium
          fonts-noto-cjk golang-go golang-github-gomodule-redigo-dev golang-github-mna-redisc-dev golang-golang-x-net-dev litmus cadaver rclone nodejs
          php-cli php-redis php-zip php-intl php-mbstring golang-golang-x-text-dev composer phpunit prometheus postgresql pgbouncer universal-ctags valgrind
          dpkg-dev nftables iproute2 gdb libfaketime)
fi
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

if [ "$mode" = asan ] || [ "$mode" = tsan ]; then
  if [ "$mode" = asan ]; then
    flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  else
    flags="-fsanitize=thread"
  fi
  cmake -S . -B "build-$mode" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
  cmake --build "build-$mode" -j"$jobs"
  cd "build-$mode"
  exec ctest --output-on-failure -E '^packaging_consumers$'
fi

# The Node.js client (clients/node, docs/node.md): its npm dependencies from
# the committed lockfile, then compiled, before CMake registers the node_tests and kit_node tests.
# The demo does not need it.
[ "$mode" = demo ] || (cd clients/node && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)

# The Python package and its tests use Debian's python3 (where python3-pytest
# and pybind11-dev are), not another python3 that may come first in PATH.
# test: every part of the suite, whatever an earlier configure (the demo's,
# before the test packages were installed) left in build/'s cache; a part
# that cannot be built fails the configure with its name.
suite=(-DPATHLOCK_FULL_SUITE=OFF)
[ "$mode" = demo ] || suite=(-DPATHLOCK_FULL_SUITE=ON -DPATHLOCK_BUILD_PYTHON=ON)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPATHLOCK_WERROR=ON -DPython3_EXECUTABLE=/usr/bin/python3 \
  "${suite[@]}" >/dev/null

if [ "$mode" = demo ]; then
  cmake --build build -j"$jobs" --target pathlock_cli
  exec build/bin/pathlock demo
fi
cmake --build build -j"$jobs"
cd build
# Two tests at a time: most wait on servers more than they compute. Every
# test has a time limit (tests/support/watchdog.cmake): a hang fails in
# minutes with the stuck test's name and its threads' stacks.
exec ctest --output-on-failure -j"$jobs"
