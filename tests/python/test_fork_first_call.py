"""A fork that lands while another thread makes an engine's first call
(docs/design.md#fork), through the Python binding: many fresh interpreters,
each forking at a sync point (the other thread is entering the call) plus a
swept number of loop turns. Each child must take, see and release a lock of
its own; a child that hangs is shown (gdb) and killed, and fails the test."""
import os
import subprocess
import sys

PROBE = r"""
import os, subprocess, sys, threading, time
import pathlock

url, race, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
made = pathlock.RedisEngine(url) if race == "call" else None
entering, result = threading.Event(), []


def take_check_release(engine, path):
    r = engine.acquire("fork-probe-py", "probe", "upload", {"target": path})
    ok = r.granted and engine.is_held("fork-probe-py", r.grant.id, r.grant.token)
    return bool(r.granted and engine.release("fork-probe-py", r.grant.id, r.grant.token) and ok)


def first():
    entering.set()  # the sync point: the call starts right after
    engine = made or pathlock.RedisEngine(url)
    result.append(take_check_release(engine, f"/probe/{os.getpid()}/parent"))


thread = threading.Thread(target=first)
thread.start()
entering.wait()
for _ in range(turns):
    pass
pid = os.fork()
if pid == 0:
    try:
        ok = take_check_release(made or pathlock.RedisEngine(url), f"/probe/{os.getpid()}/child")
    except BaseException as e:
        print(f"child: {e!r}", file=sys.stderr)
        ok = False
    os._exit(0 if ok else 1)
deadline = time.monotonic() + 20
while os.waitpid(pid, os.WNOHANG) == (0, 0):
    if time.monotonic() > deadline:
        subprocess.run(["gdb", "-nx", "-q", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                       stdout=sys.stderr, stderr=sys.stderr, timeout=60)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        sys.exit(3)
    time.sleep(0.005)  # polling for the child's exit, not a sync point
thread.join()
sys.exit(0 if result == [True] else 2)
"""


def probe(url, race, turns):
    return subprocess.run([sys.executable, "-c", PROBE, url, race, str(turns)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=90, env=os.environ.copy())


def test_a_fork_during_the_first_call_leaves_a_working_child(redis_server):
    failures = []
    for race, runs, step in (("call", 40, 50), ("make", 30, 500)):
        for i in range(runs):
            done = probe(redis_server.url, race, i * step)
            if done.returncode != 0:
                failures.append(f"{race} turns={i * step}: exit {done.returncode} "
                                "(1 child failed, 2 parent failed, 3 child hung): " + done.stderr[-2000:])
    assert failures == []
