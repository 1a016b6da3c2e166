"""The engine through the binding, on both backends (real redis-server for `redis`)."""
import pytest

import pathlock

MOVE = {"src": "/p/A/C", "dst": "/p/B"}


def test_grant_conflict_release(engine, ns):
    r = engine.acquire(ns, "alice", "move_folder", MOVE, ttl=30)
    assert r and r.granted and r.conflict is None and not r.not_holder
    g = r.grant
    assert g.fence >= 1 and g.holds == 1 and 0 < g.expires_in <= 30
    refused = engine.acquire(ns, "bob", "upload", {"target": "/p/A/C/x"})
    assert not refused and refused.grant is None
    c = refused.conflict
    assert (c.id, c.op, c.role, c.path, c.owner) == (g.id, "move_folder", "src", "/p/A/C", "alice")
    assert (c.requested_role, c.requested_path, c.relation, c.queued) == ("target", "/p/A/C/x", "held_ancestor", False)
    # The same owner is refused too: a lock belongs to its grant.
    assert not engine.acquire(ns, "alice", "move_folder", MOVE)
    assert engine.is_held(ns, g.id, g.token)
    assert engine.release(ns, g.id, g.token)
    assert not engine.is_held(ns, g.id, g.token)
    assert not engine.release(ns, g.id, g.token)
    assert engine.acquire(ns, "bob", "upload", [("target", "/p/A/C/x")])


def test_parallel_uploads_and_unrelated_paths(engine, ns):
    assert engine.acquire(ns, "a", "upload", {"target": "/p/A/1"})
    assert engine.acquire(ns, "b", "upload", {"target": "/p/A/2"})
    assert engine.acquire(ns, "c", "copy_folder", {"src": "/q", "dst": "/r"})


def test_list_and_pages(engine, ns):
    grants = [engine.acquire(ns, "o", "upload", {"target": f"/d/{i}"}).grant for i in range(7)]
    engine.acquire(ns, "o", "upload", {"target": "/elsewhere"})
    locks = engine.list(ns, "/d")
    assert [l.id for l in locks] == [g.id for g in grants]
    assert locks[0].targets == [("target", "/d/0")] and locks[0].owner == "o" and locks[0].op == "upload"
    assert len(engine.list(ns)) == 8
    seen, after = [], ""
    while True:
        page = engine.list_page(ns, "/d", limit=3, after=after)
        seen += [l.id for l in page.locks]
        if not page.next:
            break
        after = page.next
    assert seen == [g.id for g in grants]


def test_renew_and_force_release(engine, ns):
    g = engine.acquire(ns, "o", "delete_folder", {"target": "/x"}, ttl=5).grant
    assert engine.renew(ns, g.id, g.token, ttl=60)
    assert engine.list(ns)[0].expires_in > 5
    assert engine.renew(ns, g.id, g.token)
    assert not engine.renew(ns, g.id, "wrong-token")
    assert engine.force_release(ns, g.id)
    assert not engine.force_release(ns, g.id)
    assert engine.list(ns) == []


def test_reenter_and_idempotency(engine, ns):
    g = engine.acquire(ns, "o", "rename_folder", {"target": "/r"}).grant
    again = engine.acquire(ns, "o", "rename_folder", {"target": "/r"}, reenter=g)
    assert again and again.grant.id == g.id and again.grant.holds == 2
    assert engine.release(ns, g.id, g.token) and engine.is_held(ns, g.id, g.token)
    assert engine.release(ns, g.id, g.token) and not engine.is_held(ns, g.id, g.token)
    gone = engine.acquire(ns, "o", "rename_folder", {"target": "/r"}, reenter=g)
    assert not gone and gone.not_holder and gone.conflict is None

    first = engine.acquire(ns, "o", "upload", {"target": "/k"}, idempotency_key="req-1").grant
    retry = engine.acquire(ns, "o", "upload", {"target": "/k"}, idempotency_key="req-1").grant
    assert (retry.id, retry.token, retry.fence) == (first.id, first.token, first.fence)
    with pytest.raises(pathlock.InvalidRequest):
        engine.acquire(ns, "other", "upload", {"target": "/k"}, idempotency_key="req-1")


def test_reenter_with_a_proof_kept_elsewhere(engine, ns):
    """Grant(id, token): the proof another process (or a stored record) kept, as in C++ and the line protocol."""
    g = engine.acquire(ns, "o", "rename_folder", {"target": "/kept"}).grant
    proof = pathlock.Grant(g.id, g.token)
    again = engine.acquire(ns, "o", "rename_folder", {"target": "/kept"}, reenter=proof)
    assert again and again.grant.id == g.id and again.grant.holds == 2
    wrong = engine.acquire(ns, "o", "rename_folder", {"target": "/kept"}, reenter=pathlock.Grant(g.id, "0" * 32))
    assert not wrong and wrong.not_holder
    with pytest.raises(pathlock.InvalidRequest):  # the rest of the request is still checked
        engine.acquire(ns, "", "rename_folder", {"target": "/kept"}, reenter=proof)


def test_blockers_and_waiters(engine, ns):
    g = engine.acquire(ns, "alice", "delete_folder", {"target": "/p"}).grant
    page = engine.blockers(ns, "upload", {"target": "/p/x"})
    assert not page.truncated and len(page.blockers) == 1
    b = page.blockers[0]
    assert (b.id, b.owner, b.op, b.path, b.relation, b.queued, b.fence) == (
        g.id, "alice", "delete_folder", "/p", "held_ancestor", False, g.fence)
    assert engine.blockers(ns, "upload", {"target": "/q"}).blockers == []
    assert engine.waiters(ns) == []


def test_context_manager_releases(engine, ns):
    with engine.lock(ns, "o", "upload", {"target": "/cm"}) as g:
        assert engine.is_held(ns, g.id, g.token)
    assert not engine.is_held(ns, g.id, g.token)


def test_context_manager_releases_on_exception(engine, ns):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with engine.lock(ns, "o", "move_folder", MOVE) as g:
            raise Boom()
    assert not engine.is_held(ns, g.id, g.token)
    assert engine.list(ns) == []


def test_context_manager_refused(engine, ns):
    held = engine.acquire(ns, "alice", "delete_folder", {"target": "/p"}).grant
    with pytest.raises(pathlock.LockRefused) as info:
        with engine.lock(ns, "bob", "upload", {"target": "/p/x"}):
            pytest.fail("entered a refused lock")
    assert info.value.conflict.id == held.id
    assert [l.id for l in engine.list(ns)] == [held.id]


def test_custom_matrix_from_file(tmp_path, redis_server):
    import os
    src = os.path.join(os.environ["PATHLOCK_SOURCE_DIR"], "matrix", "cloud-drive.json")
    m = pathlock.Matrix.from_file(src)
    assert "move_folder" in m.operations and len(m.fingerprint) > 0
    for engine in (pathlock.MemoryEngine(matrix=m), pathlock.RedisEngine(redis_server.url, matrix=m)):
        assert engine.operations == m.operations
        ns = "custom-" + engine.backend
        assert engine.acquire(ns, "a", "delete_folder", {"target": "/p"})
        assert not engine.acquire(ns, "b", "upload", {"target": "/p/x"})
    # Every problem of a bad file, listed.
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x"}', encoding="utf-8")
    with pytest.raises(pathlock.MatrixError) as info:
        pathlock.Matrix.from_file(str(bad))
    assert isinstance(info.value, ValueError) and len(info.value.problems) >= 2
    assert all(p.startswith(str(bad)) for p in info.value.problems)
