#!/usr/bin/env python3
"""Every test CTest knows runs under the watchdog with a time limit.

    check_time_limits.py --ctest CTEST   (run in the build folder)

Reads CTest's own list (`ctest --show-only=json-v1`): each test's command
must start with tests/support/watchdog.py and its --seconds, and the test's
TIMEOUT property must be above that limit (so the watchdog, which prints the
stacks, fires first). Also checks that most tests (80%) have a minute or
less, and that no name was split by CMake at a ';' (a part starts or ends
with a space). Prints the limits' spread; exits 1 naming every test that
escapes.
"""
import argparse
import collections
import json
import subprocess
import sys


def limits(test):
    command = test.get("command") or []
    timeout = next((p["value"] for p in test.get("properties", []) if p["name"] == "TIMEOUT"), None)
    watched = len(command) > 3 and command[1].endswith("/tests/support/watchdog.py") and command[2] == "--seconds"
    return (float(command[3]) if watched else None), (float(timeout) if timeout is not None else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctest", required=True)
    args = parser.parse_args()
    listing = subprocess.run([args.ctest, "--show-only=json-v1"], check=True, stdout=subprocess.PIPE, timeout=120)
    tests = json.loads(listing.stdout)["tests"]
    bad, spread = [], collections.Counter()
    for test in tests:
        seconds, timeout = limits(test)
        if test["name"] != test["name"].strip():
            bad.append(f"'{test['name']}': a name with spaces at an end (a ';' in a Catch case's name splits it "
                       "into two tests that match no case)")
        if seconds is None:
            bad.append(f"{test['name']}: not run by the watchdog (use pathlock_test() or pathlock_watch_target())")
        elif timeout is None or timeout <= seconds:
            bad.append(f"{test['name']}: CTest TIMEOUT {timeout} is not above the watchdog's {seconds:g} s")
        else:
            spread[seconds] += 1
    print(f"{len(tests)} tests; limits (seconds: tests): " +
          ", ".join(f"{s:g}: {n}" for s, n in sorted(spread.items())))
    short = sum(n for s, n in spread.items() if s <= 60)
    if tests and short < 0.8 * len(tests):
        bad.append(f"only {short} of {len(tests)} tests have a minute or less")
    if len(tests) < 10:
        bad.append(f"CTest listed {len(tests)} tests: run this in the build folder after the build")
    for line in bad:
        print("no time limit: " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
