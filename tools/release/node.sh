#!/bin/sh
# Writes the npm tarball of the Node client (clients/node) into DIST_DIR:
# installs its build tools from the committed lockfile (npm ci) if absent, then
# `npm pack`, whose prepack script builds dist/ (CommonJS, ES module wrapper,
# types) and copies in the default Functions library. The library is made by
# the C++ build: run this after it (the file is taken from PATHLOCK_LIBRARY,
# else from build/pathlock_matrix/pathlock_cloud_drive/redis/ of this checkout).
# Usage: tools/release/node.sh DIST_DIR
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 DIST_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
dist=$(cd "$1" && pwd)
: "${PATHLOCK_LIBRARY:=$root/build/pathlock_matrix/pathlock_cloud_drive/redis/pathlock_library.lua}"
if [ ! -f "$PATHLOCK_LIBRARY" ]; then
  echo "error: no Functions library at $PATHLOCK_LIBRARY: build the C++ target pathlock_cloud_drive_generate first, or set PATHLOCK_LIBRARY" >&2
  exit 1
fi
export PATHLOCK_LIBRARY
cd "$root/clients/node"
# The build tools from the lockfile, unless a checkout already has them.
[ -x node_modules/.bin/tsc ] || npm ci --no-audit --no-fund --prefer-offline
npm pack --pack-destination "$dist"
