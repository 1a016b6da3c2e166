"""Waiting (docs/lua-protocol.md "Waiting and the line"): woken by a release and
by an expiry, fairness, timeout, cancellation. The sync point is the line
itself, read with `waiters` through the C++ engine (`pathlock shell`), never
a sleep; the only time bound is the kit's patience against a hung driver."""
import pytest

import cases
from kitlib import acquire_line, quote, wait_until
from test_locks import check_conflict, check_grant

LONG = 120000  # a wait that never runs out in a passing test


def in_line(observer, owner, count=1):
    """Waits until `owner` has `count` places in line (the observer's `waiters`)."""
    wait_until(f"{owner} waits in line",
               lambda: sum(w["owner"] == owner for w in observer.ask("waiters")["waiters"]) == count)


def held_and_refused():
    c = cases.conflict()
    return (c["held_op"], c["held_targets"]), (c["requested_op"], c["requested_targets"])


def held_and_waiting(driver, cpp):
    """Driver a holds the conflict case's lock; driver b's refused request
    waits in line (seen by the observer, a C++ shell). Returns a, b, the
    observer and a's grant."""
    (h, ht), (r, rt) = held_and_refused()
    a, b, observer = driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", h, ht)))
    b.send(acquire_line("b", r, rt, f"wait={LONG}"))
    in_line(observer, "b")
    return a, b, observer, g


def test_a_release_wakes_the_waiter(driver, cpp):
    a, b, observer, g = held_and_waiting(driver, cpp)
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    w = check_grant(b.answer())
    assert w["fence"] > g["fence"]
    assert observer.ask("waiters") == {"waiters": []}


def test_an_expiry_wakes_the_waiter(driver, cpp):
    (h, ht), (r, rt) = held_and_refused()
    a, b, observer = driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", h, ht, "ttl=300")))
    w = check_grant(b.ask(acquire_line("b", r, rt, f"wait={LONG}")))
    assert w["fence"] > g["fence"]
    assert a.ask(f"held {g['id']} {quote(g['token'])}") == {"held": False}
    assert observer.ask("waiters") == {"waiters": []}


def test_a_timeout_answers_the_conflict_and_leaves_the_line(driver, cpp):
    (h, ht), (r, rt) = held_and_refused()
    a, b, observer = driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", h, ht)))
    c = check_conflict(b.ask(acquire_line("b", r, rt, "wait=300")))
    assert (c["id"], c["queued"]) == (g["id"], False)
    assert observer.ask("waiters") == {"waiters": []}  # left the line before answering
    assert [l["id"] for l in observer.ask("locks")["locks"]] == [g["id"]]


def test_an_older_waiter_refuses_a_fair_request(driver, cpp):
    triple = cases.fairness_triple()
    if triple is None:
        pytest.skip("the matrix has no operations H, R, X with H refusing R, admitting X, and R refusing X")
    h, r, x, path = triple
    a, b, c, observer = driver(), driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", h, {cases.role_of(h): path})))
    b.send(acquire_line("b", r, {cases.role_of(r): path}, f"wait={LONG}"))
    in_line(observer, "b")
    refused = check_conflict(c.ask(acquire_line("c", x, {cases.role_of(x): path})))
    assert (refused["queued"], refused["owner"], refused["op"]) == (True, "b", r)
    unfair = check_grant(c.ask(acquire_line("c", x, {cases.role_of(x): path}, "fair=false")))
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    assert c.ask(f"release {unfair['id']} {quote(unfair['token'])}") == {"released": True}
    check_grant(b.answer())


def test_cancel_leaves_nothing_held_and_nobody_in_line(driver, cpp, needs):
    needs("cancel")
    (h, ht), (r, rt) = held_and_refused()
    a, b, observer = driver(), driver(), cpp()
    assert b.ask("cancel") == {"cancelled": False}
    g = check_grant(a.ask(acquire_line("a", h, ht)))
    b.send(acquire_line("b", r, rt, f"wait={LONG}"))
    in_line(observer, "b")
    b.send("held nosuch token")  # sent during the wait: answered after it, before the cancel's answer
    b.send("cancel")
    assert b.answer() == {"granted": False, "cancelled": True}
    assert b.answer() == {"held": False}
    assert b.answer() == {"cancelled": True}
    assert observer.ask("waiters") == {"waiters": []}
    assert [l["id"] for l in observer.ask("locks")["locks"]] == [g["id"]]
    assert b.ask("cancel") == {"cancelled": False}


def test_lines_during_a_wait_are_answered_after_it(driver, cpp, needs):
    needs("cancel")  # the driver reads its input while it waits
    a, b, observer, g = held_and_waiting(driver, cpp)
    b.send("held nosuch token")
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    check_grant(b.answer())
    assert b.answer() == {"held": False}


def test_end_of_input_does_not_cancel_a_wait(driver, cpp):
    a, b, observer, g = held_and_waiting(driver, cpp)
    b.proc.stdin.close()
    in_line(observer, "b")
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    check_grant(b.answer())
