"""Limits per namespace through the binding, on both backends (docs/python.md#limits-per-namespace)."""
import asyncio
import time

import pytest

import pathlock


def test_a_limit_refuses_with_its_name_and_count(engine, ns):
    engine.set_limits(ns, pathlock.Limits(locks=2))
    for i in range(2):
        assert engine.acquire(ns, "alice", "upload", {"target": f"/l/{i}"})
    r = engine.acquire(ns, "bob", "upload", {"target": "/l/x"})
    assert not r and r.grant is None and r.conflict is None and not r.not_holder
    assert (r.over_limit.limit, r.over_limit.max, r.over_limit.count) == ("locks", 2, 2)
    assert "over_limit locks 2/2" in repr(r)
    with pytest.raises(pathlock.LockRefused, match="limit on locks is 2"):
        with engine.lock(ns, "bob", "upload", {"target": "/l/x"}):
            pass
    s = engine.limits(ns)
    assert s.overrides == pathlock.Limits(locks=2) and s.effective == s.overrides and s.defaults == pathlock.Limits()
    assert (s.locks, s.places, s.owner_locks, s.owner) == (2, 0, 2, "alice")
    engine.set_limits(ns, None)
    assert engine.limits(ns).overrides is None
    assert engine.acquire(ns, "bob", "upload", {"target": "/l/x"})


def test_a_waiting_request_over_a_limit_is_answered_at_once(engine, ns):
    engine.set_limits(ns, pathlock.Limits(owner_locks=1))
    assert engine.acquire(ns, "alice", "upload", {"target": "/w/1"})
    began = time.monotonic()
    r = engine.acquire(ns, "alice", "upload", {"target": "/w/2"}, wait=20)
    assert r.over_limit.limit == "owner_locks" and time.monotonic() - began < 10
    r = asyncio.run(engine.acquire_async(ns, "alice", "upload", {"target": "/w/3"}, wait=20))
    assert r.over_limit.limit == "owner_locks" and time.monotonic() - began < 10


def test_the_default_applies_until_a_namespace_has_its_own(engine, ns):
    engine.set_default_limits(pathlock.Limits(locks=1))
    try:
        assert engine.acquire(ns, "a", "upload", {"target": "/d/1"})
        assert engine.acquire(ns, "a", "upload", {"target": "/d/2"}).over_limit.max == 1
        engine.set_limits(ns, pathlock.Limits())
        assert engine.acquire(ns, "a", "upload", {"target": "/d/2"})
    finally:
        engine.set_default_limits(pathlock.Limits())


def test_bad_limits_are_invalid_requests(engine, ns):
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.Limits(locks=-1)
    with pytest.raises(pathlock.InvalidRequest):
        engine.set_limits(ns, pathlock.Limits(places=10**12))
    with pytest.raises(pathlock.InvalidRequest):
        engine.set_limits("bad ns", pathlock.Limits())
