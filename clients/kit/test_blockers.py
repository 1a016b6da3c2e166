"""`blockers` and `waiters` (docs/cli.md; the Lua functions of the same names)."""
import pytest

import cases
from kitlib import acquire_line, quote
from test_locks import check_grant
from test_waiting import LONG, in_line


def paths(targets):
    return " ".join(quote(p) for p in targets.values())


def test_blockers_name_the_held_lock(driver, needs):
    needs("blockers")
    c = cases.conflict()
    d = driver()
    assert d.ask(f"blockers {c['requested_op']} {paths(c['requested_targets'])}") == {"blockers": [],
                                                                                       "truncated": False}
    g = check_grant(d.ask(acquire_line("a", c["held_op"], c["held_targets"])))
    answer = d.ask(f"blockers {c['requested_op']} {paths(c['requested_targets'])}")
    assert answer["truncated"] is False
    (b,) = answer["blockers"]
    assert (b["kind"], b["queued"], b["id"], b["owner"], b["op"], b["role"], b["path"], b["relation"]) == (
        "lock", False, g["id"], "a", c["held_op"], c["held_role"], c["held_path"], c["relation"])
    assert (b["requested_role"], b["fence"], b["holds"], b["waited_ms"]) == (c["requested_role"], g["fence"], 1, 0)
    assert isinstance(b["expires_in_ms"], int) and 0 < b["expires_in_ms"] <= 30000
    assert d.ask(f"blockers {c['requested_op']} {paths(c['requested_targets'])} limit=0").keys() == {"error"}
    assert d.ask(f"blockers no_such_op {paths(c['requested_targets'])}").keys() == {"error"}


def test_blockers_limit_and_truncated(driver, needs):
    needs("blockers")
    found = cases.two_holders()
    if found is None:
        pytest.skip("the matrix has no two operations that hold together and both refuse a third")
    h1, h2, r, path = found
    d = driver()
    g1 = check_grant(d.ask(acquire_line("a", h1, {cases.role_of(h1): path})))
    g2 = check_grant(d.ask(acquire_line("b", h2, {cases.role_of(h2): path})))
    line = f"blockers {r} {quote(path)}"
    both = d.ask(line)
    assert both["truncated"] is False
    assert sorted(b["id"] for b in both["blockers"]) == sorted([g1["id"], g2["id"]])
    one = d.ask(f"{line} limit=1")
    assert (len(one["blockers"]), one["truncated"]) == (1, True)


def test_blockers_show_an_older_waiter_unless_unfair(driver, cpp, needs):
    needs("blockers")
    triple = cases.fairness_triple()
    if triple is None:
        pytest.skip("the matrix has no operations H, R, X with H refusing R, admitting X, and R refusing X")
    h, r, x, path = triple
    a, b, observer = driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", h, {cases.role_of(h): path})))
    b.send(acquire_line("b", r, {cases.role_of(r): path}, f"wait={LONG}"))
    in_line(observer, "b")
    (w,) = a.ask(f"blockers {x} {quote(path)}")["blockers"]
    assert (w["kind"], w["queued"], w["owner"], w["op"], w["fence"], w["holds"]) == ("waiter", True, "b", r, 0, 0)
    assert isinstance(w["waited_ms"], int) and isinstance(w["expires_in_ms"], int)
    assert a.ask(f"blockers {x} {quote(path)} fair=false") == {"blockers": [], "truncated": False}
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    check_grant(b.answer())


def test_waiters_list_the_line(driver, cpp, needs):
    needs("waiters")
    c = cases.conflict()
    a, b1, b2, observer = driver(), driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", c["held_op"], c["held_targets"])))
    assert a.ask("waiters") == {"waiters": []}
    b1.send(acquire_line("b1", c["requested_op"], c["requested_targets"], f"wait={LONG}"))
    in_line(observer, "b1")
    b2.send(acquire_line("b2", c["requested_op"], c["requested_targets"], f"wait={LONG}"))
    in_line(observer, "b2")
    line = a.ask("waiters")["waiters"]
    assert [w["owner"] for w in line] == ["b1", "b2"]  # oldest first
    for w in line:
        assert w["op"] == c["requested_op"] and w["targets"] == c["requested_targets"]
        assert isinstance(w["id"], str) and isinstance(w["waited_ms"], int) and isinstance(w["expires_in_ms"], int)
    assert [w["owner"] for w in a.ask("waiters limit=1")["waiters"]] == ["b1"]
    assert a.ask(f"waiters {quote('/kit-nowhere')}") == {"waiters": []}
    assert a.ask("waiters limit=1001").keys() == {"error"}
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    first = check_grant(b1.answer())
    assert b1.ask(f"release {first['id']} {quote(first['token'])}") == {"released": True}
    second = check_grant(b2.answer())
    assert second["fence"] > first["fence"]
