#!/usr/bin/env python3
"""Runs one test under a time limit; a test that runs out shows where it hung.

    watchdog.py --seconds N [--name NAME] -- COMMAND [ARG...]

Every CTest test runs through this (cmake/PathlockTest.cmake: pathlock_test()
for registered commands, CROSSCOMPILING_EMULATOR for the Catch2 cases). The
command starts in a session of its own, so every process it starts (forked
children, servers it launched) can be found again. When N seconds pass:

1. each process of that session is named (pid, command line), and gdb, run in
   batch mode, prints the stack of every thread of each (servers pathlock
   does not own, such as redis-server or postgres, are named but not dumped);
2. the whole session is killed (SIGKILL), and this exits with 124.

CTest's own TIMEOUT for the test is set above N (by pathlock_test), so the
stacks are printed before CTest would kill the process without a word. The
command's exit status is this program's otherwise; SIGTERM and SIGINT are
passed on to the session.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

# Processes named here are servers started by the tests: their stacks say
# nothing about pathlock's hang and would take long to print.
NOT_DUMPED = {"redis-server", "redis-sentinel", "postgres", "pgbouncer", "chromium", "chrome",
              "chromedriver", "prometheus", "litmus", "gdb"}
MAX_DUMPS = 8
GDB_SECONDS = 60


def session_members(sid):
    """The pids whose session id is sid (read from /proc), sid's own first."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # Fields after the command name (which may hold spaces) in parentheses.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            members.append(int(entry))
    return sorted(members, key=lambda pid: (pid != sid, pid))


def describe(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
    except OSError:
        return "?", "(gone)"
    return comm, " ".join(a.decode(errors="replace") for a in argv if a)[:300]


def dump_stacks(pid, out):
    gdb = shutil.which("gdb")
    if not gdb:
        print("watchdog: gdb is not installed; no stacks (apt-get install gdb)", file=out, flush=True)
        return
    command = [gdb, "-nx", "-q", "-batch", "-p", str(pid), "-ex", "set pagination off",
               "-ex", "info threads", "-ex", "thread apply all bt"]
    try:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, timeout=GDB_SECONDS)
        text = result.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        text = f"(gdb did not finish in {GDB_SECONDS} s)"
    print(text, file=out, flush=True)


def report_and_kill(child, name, seconds, out):
    members = session_members(child.pid)
    print(f"\nwatchdog: '{name}' ran out of its {seconds:g} s; the {len(members)} processes of its session "
          "and the stack of every thread follow, then all are killed", file=out, flush=True)
    for pid in members:
        comm, cmdline = describe(pid)
        print(f"watchdog: process {pid} ({comm}): {cmdline}", file=out, flush=True)
    dumped = 0
    for pid in members:
        comm, _ = describe(pid)
        if comm in NOT_DUMPED or dumped == MAX_DUMPS:
            continue
        print(f"\nwatchdog: ===== stacks of process {pid} ({comm}) =====", file=out, flush=True)
        dump_stacks(pid, out)
        dumped += 1
    kill_session(child.pid)
    print(f"watchdog: '{name}' killed after {seconds:g} s", file=out, flush=True)


def kill_session(sid):
    for pid in session_members(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, required=True, help="the test's time limit")
    parser.add_argument("--name", default=None, help="the test's name, for the report")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.seconds <= 0:
        parser.error("give --seconds N (N > 0), then -- and the command")
    name = args.name or os.path.basename(command[0])

    child = subprocess.Popen(command, start_new_session=True)

    def pass_on(signum, _frame):
        try:
            os.killpg(child.pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)
    deadline = time.monotonic() + args.seconds
    while True:
        try:
            status = child.wait(timeout=max(0.0, deadline - time.monotonic()))
            break
        except subprocess.TimeoutExpired:
            report_and_kill(child, name, args.seconds, sys.stderr)
            child.wait()
            return 124
    # Whatever the command left behind in its session goes with it.
    kill_session(child.pid)
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    sys.exit(main())
