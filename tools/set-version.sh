#!/bin/sh
# tools/set-version.sh X.Y.Z: sets the version everywhere it is written.
#
# VERSION is the one source (CMake, the C++ header and the Python package
# read it at build time). The files below repeat it because their ecosystems
# read them without running anything of ours: npm's package.json and its
# lockfile, composer.json, and the Go and PHP constants. CTest
# version_and_license fails when any of them disagrees with VERSION.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
new=${1:-}
if ! printf '%s\n' "$new" | grep -Eqx '(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)'; then
  echo "usage: tools/set-version.sh X.Y.Z (a semantic version, no prefix)" >&2
  exit 2
fi
cd "$root"
old=$(cat VERSION)

# The package's own "version" fields: the first in package.json and
# composer.json, the first two in the lockfile (its top and its root
# package); the dependencies' versions come later and stay.
first_versions() {  # FILE COUNT
  python3 -c '
import re, sys
path, count, new = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path, encoding="utf-8").read()
text, n = re.subn(r"(\"version\":\s*\")[^\"]*(\")", lambda m: m.group(1) + new + m.group(2), text, count=count)
assert n == count, f"{path}: {n} version fields, expected {count}"
open(path, "w", encoding="utf-8").write(text)
' "$1" "$2" "$new"
}

first_versions clients/node/package.json 1
first_versions clients/node/package-lock.json 2
first_versions clients/php/composer.json 1
sed -i "s/^const Version = \"[^\"]*\"/const Version = \"$new\"/" clients/go/client.go
sed -i "s/public const VERSION = '[^']*';/public const VERSION = '$new';/" clients/php/src/LockEngine.php
printf '%s\n' "$new" > VERSION
echo "version $old -> $new; docs/changes.md and CHANGELOG.md name the release"
