"""The shared test vectors (share/pathlock/test-vectors/, docs/lua-protocol.md#test-vectors),
checked against the engine through the binding: what another client is told to expect."""
import pytest

import pathlock
from conftest import fresh_ns, load_vector

PATHS = load_vector("paths.json")
CASES = load_vector("matrix-cases.json")


def test_vectors_are_not_empty():
    assert len(PATHS["normalize"]) >= 10 and len(PATHS["invalid"]) >= 10
    assert len(CASES["cases"]) >= 100


@pytest.mark.parametrize("case", PATHS["normalize"], ids=lambda c: c["input_hex"][:40])
def test_path_normalises(case):
    assert bytes.fromhex(case["input_hex"]).decode("utf-8") == case["input"]
    assert pathlock.normalize_path(case["input"]) == case["canonical"]


@pytest.mark.parametrize("case", PATHS["invalid"], ids=lambda c: c["input_hex"][:40])
def test_path_is_refused(case, engine):
    raw = bytes.fromhex(case["input_hex"])
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.normalize_path(raw)
    ns = fresh_ns()
    with pytest.raises(pathlock.InvalidRequest):
        engine.acquire(ns, "o", "upload", {"target": raw})
    assert engine.list(ns) == []


def test_matrix_cases(engine):
    """Every case derived from the shipped matrix (held op x requested op x relation), one namespace each."""
    assert CASES["fingerprint"] == pathlock.Matrix.from_file(_shipped_matrix()).fingerprint
    failures = []
    for case in CASES["cases"]:
        ns = fresh_ns()
        held = engine.acquire(ns, "holder", case["held_op"], case["held_targets"])
        assert held, case
        r = engine.acquire(ns, "requester", case["requested_op"], case["requested_targets"])
        if r.granted != case["granted"]:
            failures.append(case)
        elif not r.granted:
            c = r.conflict
            if (c.id, c.role, c.path, c.requested_role, c.relation) != (
                    held.grant.id, case["held_role"], case["held_path"], case["requested_role"], case["relation"]):
                failures.append(case)
        for g in (held, r):
            if g:
                engine.release(ns, g.grant.id, g.grant.token)
    assert failures == []


def _shipped_matrix():
    import os
    return os.path.join(os.environ["PATHLOCK_SOURCE_DIR"], "matrix", "cloud-drive.json")
