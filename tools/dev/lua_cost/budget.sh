#!/usr/bin/env bash
# CTest lua_cost_budget: the library's instructions per acquire+release pair
# and per refused acquire (instructions.sh, 3,000 held, 1,000 calls) against
# the figures in recorded.txt; fails when either is more than 10% above.
# Exit 77 (skipped) without valgrind.
# Usage: tools/dev/lua_cost/budget.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: budget.sh BUILD_DIR}
command -v valgrind >/dev/null || { echo "lua_cost_budget: valgrind is not installed: skipped"; exit 77; }
status=0
for what in pair refused; do
  recorded=$(awk -v w="$what" '$1 == w {print $2}' "$here/recorded.txt")
  [[ -n $recorded ]] || { echo "lua_cost_budget: no '$what' figure in recorded.txt" >&2; exit 2; }
  line=$(if [[ $what == refused ]]; then REFUSED=1 "$here/instructions.sh" "$build" 3000 1000; else
           "$here/instructions.sh" "$build" 3000 1000; fi)
  measured=${line%% *}
  echo "$line"
  awk -v w="$what" -v m="$measured" -v r="$recorded" 'BEGIN {
    printf "%s: %d measured, %d recorded: %.3fx\n", w, m, r, m / r; exit !(m <= r * 1.10) }' || {
    echo "lua_cost_budget: $what costs more than 10% over its recorded figure (tools/dev/lua_cost/recorded.txt)"; status=1; }
done
exit $status
