"""The edges of the binding (issue: lock safety at the edges): a cancelled or
interrupted wait, a fork, a callback that calls back, and bad input. Each test
is a finding that failed before the fix; none asserts a duration. Sync points
are the engine's own view (waiters(), list()), never sleeps."""
import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import pathlock

from conftest import fresh_ns


def until(cond, timeout=20.0):
    """Polls cond() until true (a sync point on the engine's state); fails the test after `timeout`."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            pytest.fail("condition never became true")
        time.sleep(0.005)


def hold(engine, ns, path="/p/A"):
    r = engine.acquire(ns, "holder", "move_folder", {"src": path, "dst": "/q"})
    assert r.granted
    return r.grant


def nothing_left(engine, ns, held):
    """After the holder releases: nobody waits, nothing is held."""
    assert engine.waiters(ns) == []
    assert engine.release(ns, held.id, held.token)
    assert engine.list(ns) == []
    assert engine.waiters(ns) == []


# 1. A cancelled waiter keeps nothing.
def test_wait_for_timeout_leaves_nothing_held_nor_in_line(engine, ns):
    held = hold(engine, ns)

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(engine.acquire_async(ns, "w", "upload", {"target": "/p/A/C/x"}, wait=60), 0.3)

    asyncio.run(main())
    nothing_left(engine, ns, held)


def test_task_cancel_on_lock_async_leaves_nothing(engine, ns):
    held = hold(engine, ns)

    async def main():
        async def body():
            async with engine.lock_async(ns, "w", "upload", {"target": "/p/A/x"}, wait=60):
                pytest.fail("granted while the move is held")

        task = asyncio.create_task(body())
        while not engine.waiters(ns):  # the sync point: it is in line
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    nothing_left(engine, ns, held)


def test_timeout_and_taskgroup_cancellation_leave_nothing(engine, ns):
    if not hasattr(asyncio, "timeout"):
        pytest.skip("asyncio.timeout and TaskGroup need Python 3.11")
    held = hold(engine, ns)

    async def main():
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await engine.acquire_async(ns, "w1", "upload", {"target": "/p/A/1"}, wait=60)

        async def fails_soon():
            while len(engine.waiters(ns)) < 1:
                await asyncio.sleep(0.005)
            raise RuntimeError("sibling failed")

        with pytest.raises(BaseExceptionGroup):
            async with asyncio.TaskGroup() as tg:
                tg.create_task(engine.acquire_async(ns, "w2", "upload", {"target": "/p/A/2"}, wait=60))
                tg.create_task(fails_soon())

    asyncio.run(main())
    nothing_left(engine, ns, held)


def test_a_grant_racing_the_cancellation_is_released(engine, ns):
    """Release and cancel in the same loop step, many times: whichever wins, the task either got the
    grant (and releases it) or nothing is held."""
    async def main():
        for i in range(30):
            held = hold(engine, ns)
            task = asyncio.create_task(engine.acquire_async(ns, "w", "upload", {"target": "/p/A/x"}, wait=60))
            while not engine.waiters(ns):
                await asyncio.sleep(0.002)
            engine.release(ns, held.id, held.token)
            if i % 2:
                await asyncio.sleep(0)
            task.cancel()
            try:
                r = await task
                assert r.granted
                assert engine.release(ns, r.grant.id, r.grant.token)
            except asyncio.CancelledError:
                pass
            assert engine.list(ns) == [], f"round {i}: a lock stayed held"
            assert engine.waiters(ns) == []

    asyncio.run(main())


# 5. Waiters use the binding's own threads: a free path is answered while 1,000 wait.
def test_many_waiting_coroutines_starve_neither_a_free_path_nor_the_default_executor(engine, ns):
    held = hold(engine, ns)

    async def main():
        loop = asyncio.get_running_loop()
        waiting = [asyncio.create_task(engine.acquire_async(ns, f"w{i}", "upload", {"target": f"/p/A/{i}"},
                                                            wait=60)) for i in range(1000)]
        until_in_line = 60  # at least the pool's worth are in line (the rest queue for a thread)
        while len(engine.waiters(ns)) < until_in_line:
            await asyncio.sleep(0.01)
        free = await engine.acquire_async(ns, "free", "upload", {"target": "/elsewhere"}, wait=5)
        assert free.granted
        assert await engine.release_async(ns, free.grant.id, free.grant.token)
        # The default executor is untouched: a to_thread call runs at once.
        assert await asyncio.to_thread(lambda: 42) == 42
        assert await loop.run_in_executor(None, lambda: 7) == 7
        for t in waiting:
            t.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)

    asyncio.run(main())
    nothing_left(engine, ns, held)


# 2. Ctrl-C during a wait that then succeeds: the grant is released, never dropped.
def test_ctrl_c_during_a_wait_releases_the_grant(redis_server):
    """A child process waits inside `with engine.lock(...)`; the test sends SIGINT while it waits
    (sync point: it is in line) and at the same moment releases the holder."""
    ns = fresh_ns()
    engine = pathlock.RedisEngine(redis_server.url)
    held = hold(engine, ns)
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import pathlock, sys
        e = pathlock.RedisEngine({redis_server.url!r})
        try:
            with e.lock({ns!r}, "w", "upload", {{"target": "/p/A/x"}}, wait=60):
                print("granted", flush=True)
                import time; time.sleep(60)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """)], stdout=subprocess.PIPE, text=True)
    until(lambda: len(engine.waiters(ns)) == 1)
    engine.release(ns, held.id, held.token)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert "interrupted" in out
    assert engine.list(ns) == [], "the interrupted owner's lock stayed held"
    assert engine.waiters(ns) == []


def test_stop_source_stops_a_sync_wait_from_another_thread(engine, ns):
    held = hold(engine, ns)
    stop = pathlock.StopSource()
    out = []
    t = threading.Thread(target=lambda: out.append(
        engine.acquire(ns, "w", "upload", {"target": "/p/A/x"}, wait=60, stop=stop)))
    t.start()
    until(lambda: len(engine.waiters(ns)) == 1)
    assert stop.request_stop()
    t.join(30)
    assert not t.is_alive()
    assert out[0].cancelled and not out[0].granted
    assert "cancelled" in repr(out[0])
    nothing_left(engine, ns, held)


# 3. Fork: the child gets its own connections; every grant is real; the parent keeps working.
FORK_CHILD = """
import os, sys, pathlock
def child(engine, ns, n, w):
    bad = 0
    for i in range(n):
        path = f"/fork/{os.getpid()}/{i}"
        r = engine.acquire(ns, f"c{os.getpid()}", "upload", {"target": path})
        if not r.granted:
            bad += 1
            continue
        locks = [l for l in engine.list(ns, path) if l.id == r.grant.id]
        if len(locks) != 1 or locks[0].targets != [("target", path)] or not engine.is_held(ns, r.grant.id, r.grant.token):
            bad += 1
        if not engine.release(ns, r.grant.id, r.grant.token):
            bad += 1
    os.write(w, str(bad).encode())
"""


def test_fork_under_load_every_grant_is_real(redis_server):
    ns = fresh_ns()
    engine = pathlock.RedisEngine(redis_server.url, pool_size=2)
    scope = {}
    exec(FORK_CHILD, scope)
    stop = threading.Event()
    parent_errors = []

    def load():  # the parent keeps the engine busy while it forks
        i = 0
        while not stop.is_set():
            try:
                r = engine.acquire(ns, "parent", "upload", {"target": f"/parent/{i % 50}"})
                if r.granted:
                    assert engine.is_held(ns, r.grant.id, r.grant.token)
                    engine.release(ns, r.grant.id, r.grant.token)
            except Exception as e:  # noqa: BLE001
                parent_errors.append(repr(e))
            i += 1

    threads = [threading.Thread(target=load) for _ in range(3)]
    for t in threads:
        t.start()
    children = []
    try:
        for _ in range(4):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(r)
                    scope["child"](engine, ns, 200, w)
                    os._exit(0)
                except BaseException as e:  # noqa: BLE001
                    os.write(w, repr(e).encode())
                    os._exit(1)
            os.close(w)
            children.append((pid, r))
        for pid, r in children:
            _, status = os.waitpid(pid, 0)
            report = os.read(r, 4096).decode()
            os.close(r)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, report
            assert report == "0", f"child {pid}: {report} grants that were not real locks"
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert parent_errors == []
    r = engine.acquire(ns, "parent", "upload", {"target": "/after"})  # the parent still works
    assert r.granted and engine.release(ns, r.grant.id, r.grant.token)


def test_an_embedded_engine_refuses_to_work_in_a_forked_child():
    engine = pathlock.MemoryEngine()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            engine.acquire("ns", "c", "upload", {"target": "/x"})
            os.write(w, b"granted")
        except pathlock.BackendError as e:
            os.write(w, str(e).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    said = os.read(r, 4096).decode()
    os.close(r)
    assert "fork" in said and "granted" not in said
    assert engine.acquire("ns", "p", "upload", {"target": "/x"}).granted  # the parent's engine works


# 4. Callbacks may call back.
def test_keeper_close_from_on_lost_does_not_abort(engine, ns):
    keeper = pathlock.LeaseKeeper(engine)
    done = threading.Event()
    r = engine.acquire(ns, "o", "upload", {"target": "/k"}, ttl=5)

    def on_lost(lock_id):
        keeper.close()  # from the keeper's own thread
        done.set()

    keeper.keep(ns, r.grant, ttl=5, on_lost=on_lost)
    assert engine.force_release(ns, r.grant.id)
    assert done.wait(30)
    keeper.close()  # twice is fine


def test_keeper_stop_and_release_from_on_lost(engine, ns):
    done = threading.Event()
    with pathlock.LeaseKeeper(engine) as keeper:
        r = engine.acquire(ns, "o", "upload", {"target": "/k"}, ttl=5)
        box = {}

        def on_lost(lock_id):
            keeper.stop(box["lease"])
            engine.release(ns, r.grant.id, r.grant.token)  # already gone: False, no deadlock
            done.set()

        box["lease"] = keeper.keep(ns, r.grant, ttl=5, on_lost=on_lost)
        assert engine.force_release(ns, r.grant.id)
        assert done.wait(30)


# 5. Papercuts.
def test_lock_refused_names_holder_owner_and_path(engine, ns):
    hold(engine, ns, "/p/A")
    with pytest.raises(pathlock.LockRefused) as e:
        with engine.lock(ns, "bob", "upload", {"target": "/p/A/x"}):
            pass
    text = str(e.value)
    assert "'holder'" in text and "'/p/A'" in text and "move_folder" in text


def test_lock_info_repr_shows_owner_and_paths(engine, ns):
    hold(engine, ns, "/p/A")
    text = repr(engine.list(ns)[0])
    assert "owner='holder'" in text and "src='/p/A'" in text and "dst='/q'" in text


@pytest.mark.parametrize("kwargs, words", [
    ({"ttl": 1e300}, "ttl"), ({"ttl": 0}, "0.001"), ({"ttl": 10**7}, "604800"), ({"wait": -1}, "wait"),
])
def test_durations_are_checked_in_seconds(engine, ns, kwargs, words):
    with pytest.raises(pathlock.InvalidRequest) as e:
        engine.acquire(ns, "o", "upload", {"target": "/x"}, **kwargs)
    assert words in str(e.value) and " ms" not in str(e.value)


@pytest.mark.parametrize("targets", [{"target": b"/x"}, {"target": "/x\udcff"}, {b"target": "/x"}])
def test_bytes_and_lone_surrogates_are_invalid_requests(engine, ns, targets):
    with pytest.raises(pathlock.InvalidRequest):
        engine.acquire(ns, "o", "upload", targets)


def test_lone_surrogate_owner_is_an_invalid_request(engine, ns):
    with pytest.raises(pathlock.InvalidRequest):
        engine.acquire(ns, "o\udcff", "upload", {"target": "/x"})


def test_matrix_from_a_directory_is_an_invalid_request(tmp_path):
    with pytest.raises(pathlock.InvalidRequest) as e:
        pathlock.Matrix.from_file(str(tmp_path))
    assert "directory" in str(e.value)
