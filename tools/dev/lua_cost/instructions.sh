#!/usr/bin/env bash
# Instructions a redis-server runs per pathlock acquire+release pair, counted
# by valgrind's callgrind: deterministic, so it compares two builds of the
# Lua library exactly on a busy machine where timings do not
# (docs/benchmarks.md#where-the-time-of-a-call-goes). User-space
# instructions of the server only: the kernel's share of a round trip is not
# in it.
#
# Usage: tools/dev/lua_cost/instructions.sh [BUILD_DIR] [HELD] [PAIRS] [REDIS_SERVER]
#   BUILD_DIR     the build with bin/pathlock-pair-loop (default: build)
#   HELD, PAIRS   locks held before counting, pairs counted (3000, 1000)
#   REDIS_SERVER  the server binary (default: redis-server on PATH)
# Environment:
#   DEPTH=N       components of every path (default 5; 4..60)
#   RING=N        distinct paths the pairs cycle through (default 1000, as
#                 pathlock-bench's clients; fewer paths recur more often)
#   LIBRARY=FILE  a library text to load first (e.g. from `pathlock-matrixc
#                 --lua FILE` of another commit): the engine uses a library
#                 already loaded under its name, so two library versions can
#                 be compared with one build (give the old text the new
#                 library's name: the hash in its first lines)
#   REFUSED=1     count refused acquires instead of pairs: a delete_folder
#                 held on the pairs' folder refuses each (the other hot call)
#   CONVERT=1     count conversions instead of pairs: one lock converted to an
#                 upload of each path in turn (granted; docs/lua-protocol.md#convert)
#   CONVERT_IN_PLACE=1  count conversions of a lock to another operation on
#                 the same path (upload <-> delete_file, one lock per path of
#                 the ring, taken before counting)
#   OP=NAME       the pairs' and acquires' operation (one target; default upload)
#   ACQUIRE=1     count granted acquires alone (a pair without its release;
#                 the locks stay held)
# Needs valgrind (apt-get install valgrind). Starts its own server through
# the test launcher (tests/support/pathlock-testenv; $PATHLOCK_TESTENV
# overrides it), on a free loopback port, and stops it. Prints: "<n> instructions per pair (...)".
set -euo pipefail
build=${1:-build}
held=${2:-3000}
pairs=${3:-1000}
server=${4:-redis-server}
loop="$build/bin/pathlock-pair-loop"
[[ -x $loop ]] || { echo "instructions.sh: $loop is missing (cmake --build $build --target pathlock-pair-loop)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 2; }
command -v callgrind_control >/dev/null || { echo "instructions.sh: callgrind_control is missing" >&2; exit 2; }

work=$(mktemp -d)
here=$(cd "$(dirname "$0")" && pwd)
testenv=${PATHLOCK_TESTENV:-$here/../../../tests/support/pathlock-testenv}
# The server comes from the one test launcher (tests/README.md), run under
# callgrind: valgrind runs it in its own process, so the pid the launcher
# reports is the one callgrind_control talks to.
cat >"$work/server" <<WRAP
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" "$server" "\$@"
WRAP
chmod +x "$work/server"
coproc TESTENV { PATHLOCK_REDIS_SERVER="$work/server" exec "$testenv" --limit 120 redis; }
cleanup() {
  exec {TESTENV[1]}>&- 2>/dev/null || true  # its stdin closed: it stops the server and exits
  wait "$TESTENV_PID" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
read -r -t 180 started <&"${TESTENV[0]}" || { echo "instructions.sh: the launcher started no server" >&2; exit 1; }
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$started" "$1"; }
port=$(field port)
vg=$(field pid)

url="redis://127.0.0.1:$port"
ring=${RING:-1000}
depth=${DEPTH:-5}
if [[ -n ${LIBRARY:-} ]]; then
  redis-cli -p "$port" -x FUNCTION LOAD REPLACE <"$LIBRARY" >/dev/null
fi
mode=()
what="pair"
if [[ -n ${REFUSED:-} ]]; then mode=(--refused); what="refused acquire"; fi
if [[ -n ${CONVERT:-} ]]; then mode=(--convert); what="conversion"; fi
if [[ -n ${ACQUIRE:-} ]]; then mode=(--acquire); what="granted acquire"; fi
if [[ -n ${OP:-} ]]; then mode+=(--op "$OP"); what="$what ($OP)"; fi
if [[ -n ${CONVERT_IN_PLACE:-} ]]; then mode=(--convert-in-place --locks "$work/locks"); what="conversion in place"; fi
"$loop" --redis "$url" --held "$held" --pairs 100 --ring "$ring" --depth "$depth" "${mode[@]}" # the held locks, the library, warm caches
callgrind_control -z "$vg" >/dev/null 2>&1
"$loop" --redis "$url" --pairs "$pairs" --ring "$ring" --depth "$depth" "${mode[@]}"
rm -f "$work"/cg.*.*
callgrind_control -d "$vg" >/dev/null 2>&1
dump=""
for _ in $(seq 1 100); do
  dump=$(ls "$work"/cg.*.* 2>/dev/null | head -1 || true)
  [[ -n $dump ]] && grep -q '^totals:' "$dump" 2>/dev/null && break
  sleep 0.1
done
total=$(grep '^totals:' "$dump" | awk '{print $2}')
echo "$((total / pairs)) instructions per $what ($held held, depth $depth, $pairs ${what}s over $ring paths, one client;" \
  "$("$server" --version | awk '{print $3}')${LIBRARY:+; library $LIBRARY})"
