"""Conversion through the binding (docs/design.md#conversion), on the embedded backend: sync, waiting,
would_deadlock and asyncio; and on Redis, where a lock converted by one engine is seen converted by
another."""
import asyncio
import threading
import time

import pytest

import pathlock

COPY = {"src": "/p/A", "dst": "/q/A"}


@pytest.fixture
def mem():
    return pathlock.MemoryEngine()


def until(done, limit=10.0):
    end = time.monotonic() + limit
    while not done():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.005)


def test_copy_then_move_one_lock(mem, ns):
    copy = mem.acquire(ns, "alice", "copy_folder", COPY).grant
    upload = mem.acquire(ns, "bob", "upload", {"target": "/p/A/x"}).grant
    refused = mem.convert(ns, copy, "move_folder", COPY)
    assert not refused and not refused.would_deadlock and refused.conflict.id == upload.id
    assert [l.op for l in mem.list(ns, "/p/A") if l.id == copy.id] == ["copy_folder"]  # as it was
    # Its dry run names the upload only; an acquire's names the copy too.
    assert [b.id for b in mem.blockers(ns, "move_folder", COPY, converts=copy.id).blockers] == [upload.id]
    assert copy.id in [b.id for b in mem.blockers(ns, "move_folder", COPY).blockers]
    assert mem.blockers(ns, "upload", {"target": "/p/A/z"}, converts=upload.id, fair=False).blockers == []
    with pytest.raises(pathlock.InvalidRequest):
        mem.blockers(ns, "move_folder", COPY, converts="not an id")
    with pytest.raises(pathlock.InvalidRequest):  # as in Node and PHP: unfair is a conversion's dry run
        mem.blockers(ns, "move_folder", COPY, fair=False)
    assert mem.release(ns, upload.id, upload.token)
    moved = mem.convert(ns, copy, "move_folder", COPY, ttl=9, idempotency_key="move-1")
    assert moved.granted and (moved.grant.id, moved.grant.token) == (copy.id, copy.token)
    assert moved.grant.fence > copy.fence and 0 < moved.grant.expires_in <= 9
    assert mem.convert(ns, copy, "move_folder", COPY, ttl=9, idempotency_key="move-1").grant.fence == moved.grant.fence
    assert not mem.acquire(ns, "carol", "upload", {"target": "/p/A/y"})
    wrong = pathlock.Grant(copy.id, "guess")
    assert mem.convert(ns, wrong, "move_folder", COPY).not_holder
    with pytest.raises(pathlock.InvalidRequest):
        mem.convert(ns, copy, "move_folder", {"src": "/p/A"})


def test_waiting_conversion_and_would_deadlock(mem, ns):
    a = mem.acquire(ns, "alice", "upload", {"target": "/p/A/x"}).grant
    b = mem.acquire(ns, "bob", "upload", {"target": "/p/B/y"}).grant
    answer = {}
    t = threading.Thread(target=lambda: answer.update(r=mem.convert(ns, a, "delete_folder", {"target": "/p/B"},
                                                                    wait=10)))
    t.start()
    until(lambda: any(w.converts == a.id for w in mem.waiters(ns)))
    r = mem.convert(ns, b, "delete_folder", {"target": "/p/A"}, wait=10)
    assert r.would_deadlock and r.conflict.id == a.id and "would_deadlock" in repr(r)
    assert mem.release(ns, b.id, b.token)
    t.join(10)
    assert answer["r"].granted and [l.op for l in mem.list(ns)] == ["delete_folder"]


def test_convert_async_and_cancel(mem, ns):
    copy = mem.acquire(ns, "alice", "copy_folder", COPY).grant
    upload = mem.acquire(ns, "bob", "upload", {"target": "/p/A/x"}).grant

    async def main():
        waiting = asyncio.ensure_future(mem.convert_async(ns, copy, "move_folder", COPY, wait=30))
        while not any(w.converts == copy.id for w in mem.waiters(ns)):
            await asyncio.sleep(0.005)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert mem.waiters(ns) == [] and [l.op for l in mem.list(ns, "/q")] == ["copy_folder"]
        mem.release(ns, upload.id, upload.token)
        return await mem.convert_async(ns, copy, "move_folder", COPY)

    assert asyncio.run(main()).granted


def test_redis_conversion_is_seen_by_another_engine(redis_server, ns):
    engine, other = pathlock.RedisEngine(redis_server.url), pathlock.RedisEngine(redis_server.url)
    copy = engine.acquire(ns, "alice", "copy_folder", COPY).grant
    assert other.acquire(ns, "bob", "upload", {"target": "/p/A/x"}, ttl=0.2).granted
    refused = engine.convert(ns, copy, "move_folder", COPY)
    assert not refused and refused.conflict.op == "upload"
    moved = engine.convert(ns, copy, "move_folder", COPY, wait=5)
    assert moved.granted and moved.grant.id == copy.id and moved.grant.fence > copy.fence
    assert [l.op for l in other.list(ns, "/q")] == ["move_folder"]
    assert not other.acquire(ns, "carol", "upload", {"target": "/p/A/y"})
