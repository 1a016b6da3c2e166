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
#   RING=N        distinct paths the pairs cycle through (default 1000, as
#                 pathlock-bench's clients; fewer paths recur more often)
#   LIBRARY=FILE  a library text to load first (e.g. from `pathlock-matrixc
#                 --lua FILE` of another commit): the engine uses a library
#                 already loaded under its name, so two library versions can
#                 be compared with one build (give the old text the new
#                 library's name: the hash in its first lines)
#   REFUSED=1     count refused acquires instead of pairs: a delete_folder
#                 held on the pairs' folder refuses each (the other hot call)
# Needs valgrind (apt-get install valgrind). Starts its own server on a free
# loopback port and stops it. Prints: "<n> instructions per pair (...)".
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
port=""
for try in $(seq 1 50); do
  candidate=$((20000 + RANDOM % 20000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
[[ -n $port ]] || { echo "instructions.sh: no free port found" >&2; exit 1; }

valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" "$server" --port "$port" --bind 127.0.0.1 \
  --save '' --appendonly no >"$work/server.log" 2>&1 &
vg=$!
cleanup() { redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$vg" 2>/dev/null || true; wait "$vg" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 1 300); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
redis-cli -p "$port" ping >/dev/null || { echo "instructions.sh: the server did not start" >&2; cat "$work/server.log" >&2; exit 1; }

url="redis://127.0.0.1:$port"
ring=${RING:-1000}
if [[ -n ${LIBRARY:-} ]]; then
  redis-cli -p "$port" -x FUNCTION LOAD REPLACE <"$LIBRARY" >/dev/null
fi
mode=()
what="pair"
if [[ -n ${REFUSED:-} ]]; then mode=(--refused); what="refused acquire"; fi
"$loop" --redis "$url" --held "$held" --pairs 100 --ring "$ring" "${mode[@]}" # the held locks, the library, warm caches
callgrind_control -z "$vg" >/dev/null 2>&1
"$loop" --redis "$url" --pairs "$pairs" --ring "$ring" "${mode[@]}"
rm -f "$work"/cg.*.*
callgrind_control -d "$vg" >/dev/null 2>&1
dump=""
for _ in $(seq 1 100); do
  dump=$(ls "$work"/cg.*.* 2>/dev/null | head -1 || true)
  [[ -n $dump ]] && grep -q '^totals:' "$dump" 2>/dev/null && break
  sleep 0.1
done
total=$(grep '^totals:' "$dump" | awk '{print $2}')
echo "$((total / pairs)) instructions per $what ($held held, depth 5, $pairs ${what}s over $ring paths, one client;" \
  "$("$server" --version | awk '{print $3}')${LIBRARY:+; library $LIBRARY})"
