"""Waiting from threads and from asyncio, and the lease keeper. No timing
assertions: each test proves that other Python code ran while a request
waited, because that code is what lets the waiter in."""
import asyncio
import threading

import pytest

import pathlock

PATIENCE = 30.0  # seconds; a waiter that is never woken returns refused after this


def _wait_for_waiter(engine, ns):
    """Spins (in Python, holding and dropping the GIL) until a waiter is in line."""
    event = threading.Event()
    while not engine.waiters(ns):
        event.wait(0.01)
    return engine.waiters(ns)


def test_waiting_releases_the_gil(engine, ns):
    held = engine.acquire(ns, "alice", "delete_folder", {"target": "/p"}).grant
    results = []
    waiter = threading.Thread(target=lambda: results.append(
        engine.acquire(ns, "bob", "upload", {"target": "/p/x"}, wait=PATIENCE)))
    waiter.start()
    # This thread runs Python while bob waits inside the engine: it sees bob
    # in line, and its release is what grants bob.
    line = _wait_for_waiter(engine, ns)
    assert [w.owner for w in line] == ["bob"] and line[0].targets == [("target", "/p/x")]
    assert not results
    assert engine.release(ns, held.id, held.token)
    waiter.join()
    assert results[0].granted


def test_many_threads_wait_in_turn(engine, ns):
    held = engine.acquire(ns, "first", "rename_folder", {"target": "/p"}).grant
    results, lock = [], threading.Lock()

    def worker(i):
        r = engine.acquire(ns, f"w{i}", "rename_folder", {"target": "/p"}, wait=PATIENCE)
        with lock:
            results.append(r)
        if r:
            engine.release(ns, r.grant.id, r.grant.token)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    assert engine.release(ns, held.id, held.token)
    for t in threads:
        t.join()
    assert len(results) == 4 and all(r.granted for r in results)
    assert engine.list(ns) == []


def test_acquire_async_does_not_block_the_loop(engine, ns):
    held = engine.acquire(ns, "alice", "delete_folder", {"target": "/p"}).grant

    async def releaser():
        # Runs on the same event loop while the acquire below waits.
        while not engine.waiters(ns):
            await asyncio.sleep(0.01)
        return await engine.release_async(ns, held.id, held.token)

    async def main():
        waiting = engine.acquire_async(ns, "bob", "upload", {"target": "/p/x"}, wait=PATIENCE)
        return await asyncio.gather(waiting, releaser())

    result, released = asyncio.run(main())
    assert released and result.granted


def test_lock_async(engine, ns):
    async def main():
        async with engine.lock_async(ns, "o", "upload", {"target": "/a"}) as g:
            assert engine.is_held(ns, g.id, g.token)
        return g

    g = asyncio.run(main())
    assert not engine.is_held(ns, g.id, g.token)


def test_keeper_renews_and_reports_a_lost_lease(engine, ns):
    lost_ids, lost = [], threading.Event()

    def on_lost(lock_id):
        lost_ids.append(lock_id)
        lost.set()

    with pathlock.LeaseKeeper(engine) as keeper:
        g = engine.acquire(ns, "o", "move_folder", {"src": "/a", "dst": "/b"}, ttl=0.3).grant
        lease = keeper.keep(ns, g, 0.3, on_lost=on_lost)
        assert lease.id == g.id and lease.ns == ns
        # Kept alive past several TTLs: renewals happen (counted), the lock stays.
        while lease.renewals < 3:
            threading.Event().wait(0.05)
        assert engine.is_held(ns, g.id, g.token) and not lease.lost
        # An administrator takes it away: the keeper reports it, once.
        assert engine.force_release(ns, g.id)
        assert lost.wait(PATIENCE)
        assert lease.lost and lost_ids == [g.id]
        keeper.stop(lease)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the callback's own error
def test_keeper_callback_exception_does_not_kill_the_keeper(engine, ns):
    second_lost = threading.Event()

    def bad(_):
        raise RuntimeError("callback failure")

    with pathlock.LeaseKeeper(engine) as keeper:
        a = engine.acquire(ns, "o", "upload", {"target": "/a"}, ttl=0.3).grant
        b = engine.acquire(ns, "o", "upload", {"target": "/b"}, ttl=0.3).grant
        la = keeper.keep(ns, a, 0.3, on_lost=bad)
        lb = keeper.keep(ns, b, 0.3, on_lost=lambda _: second_lost.set())
        engine.force_release(ns, a.id)
        while not la.lost:
            threading.Event().wait(0.01)
        engine.force_release(ns, b.id)
        assert second_lost.wait(PATIENCE) and lb.lost


def test_keeper_closed_while_callback_pending(engine, ns):
    # Closing the keeper from the thread holding the GIL must not deadlock
    # with a callback that needs the GIL.
    keeper = pathlock.LeaseKeeper(engine)
    g = engine.acquire(ns, "o", "upload", {"target": "/c"}, ttl=0.2).grant
    keeper.keep(ns, g, 0.2, on_lost=lambda _: None)
    engine.force_release(ns, g.id)
    keeper.close()
    keeper.close()


def test_keeper_keeps_a_lock_granted_elsewhere_by_its_proof(engine, ns):
    # The proof of another process's lock says how long its lease has left
    # (what a renew just set): the keeper keeps it from there. Without
    # expires_in (0) the lease counts as ended: reported lost at once.
    g = engine.acquire(ns, "o", "upload", {"target": "/elsewhere"}, ttl=60).grant
    assert engine.renew(ns, g.id, g.token, ttl=0.3)
    proof = pathlock.Grant(g.id, g.token, expires_in=0.3)
    assert (proof.id, proof.expires_in) == (g.id, 0.3)
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.Grant(g.id, g.token, expires_in=float("nan"))
    with pathlock.LeaseKeeper(engine) as keeper:
        lease = keeper.keep(ns, proof, 0.3)
        until = threading.Event()
        for _ in range(int(PATIENCE / 0.05)):  # past several of its leases
            if lease.renewals >= 3:
                break
            assert not lease.lost
            until.wait(0.05)
        assert engine.is_held(ns, g.id, g.token) and not lease.lost
        keeper.stop(lease)
        unknown = keeper.keep(ns, pathlock.Grant(g.id, g.token), 0.3)
        for _ in range(int(PATIENCE / 0.01)):
            if unknown.lost:
                break
            until.wait(0.01)
        assert unknown.lost and unknown.renewals == 0
