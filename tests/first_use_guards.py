#!/usr/bin/env python3
"""Which objects of the library take a first-use guard (docs/design.md#fork).

A function-local static with a run-time initialiser compiles to a call of
__cxa_guard_acquire; std::call_once and pthread_once call pthread_once. A
fork that lands while another thread is inside such an initialisation
leaves it "in progress" in the child, and the child's next call through it
waits for ever. So every object of the library that calls one of them must
be one of the audited ones below, each with the reason its guard cannot be
split by a fork; and each audited object must still call it (a stale entry
is an error, so the list stays true).

    first_use_guards.py [--nm PROGRAM] ARCHIVE...

Exit status: 0 the archives match the list, 1 they do not, 64 bad usage.
"""
import argparse
import subprocess
import sys

# object file name -> why its guard is safe
AUDITED = {
    "clock.cpp.o": "steady_clock()'s static is made by a load-time initialiser, before any thread",
    "tls.cpp.o": "socket_bio()'s BIO method is made inside a NoForkSection: a fork waits for it",
}


# what the compiler emits for a first-use initialisation
GUARDS = ("__cxa_guard_acquire", "pthread_once")


def guarded_objects(nm, archive):
    """The member objects of `archive` that call one of GUARDS."""
    out = subprocess.run([nm, "-A", "-u", archive], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    found = set()
    for line in out.splitlines():
        # "archive.a:member.o:                 U __cxa_guard_acquire"
        if line.split()[-1] in GUARDS:
            found.add(line.split(":")[1])
    return found


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--nm", default="nm")
    parser.add_argument("archives", nargs="+")
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        return 64
    seen = set()
    failures = []
    for archive in args.archives:
        for obj in sorted(guarded_objects(args.nm, archive)):
            seen.add(obj)
            if obj in AUDITED:
                print(f"{archive}: {obj}: audited: {AUDITED[obj]}")
            else:
                failures.append(f"{archive}: {obj} calls __cxa_guard_acquire or pthread_once: a function-local "
                                "static or a call_once initialised at a first call, which a fork can split "
                                "(docs/design.md#fork); make it constant (constexpr/constinit) or made at load, "
                                "or audit it here")
    for obj in sorted(set(AUDITED) - seen):
        failures.append(f"{obj} is audited here but takes no first-use guard any more: remove its entry")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
