"""Limits per namespace (protocol 4.3, docs/lua-protocol.md's contract:
set_limits, acquire's default_limits and its over_limit reply). An operator
sets a namespace's own limits with the library's set_limits (called here
through the kit's RESP client), or the default of every namespace with the
key pl:limits, which a client reads at most every 5 s and sends with each
acquire. The driver's acquire over a limit is answered
{"granted":false,"over_limit":{"limit","max","count"}} (docs/cli.md), holds
nothing, and a waiting one is answered at once. Every test uses a fresh
namespace; pl:limits is the server's, so the test that sets it deletes it
whatever happens."""
import time

import pytest

from kitlib import Library, Resp, acquire_line, quote
from test_locks import _one_target_op, check_grant
from test_waiting import LONG, held_and_refused, in_line

WAIT_MS = 5000  # the wait of a refused waiting request; it must be answered well before


@pytest.fixture
def redis(redis_server):
    r = Resp(redis_server.port)
    yield r
    r.close()


@pytest.fixture
def library(redis):
    return Library(redis, "set_limits")


def set_limits(library, ns, text):
    """The namespace's own limits ("LOCKS PLACES OWNER_LOCKS"), as an operator sets them."""
    assert library("set_limits", ns, text) == ["limits", text]


def check_over_limit(answer, limit, max_, count):
    """The line protocol's answer to an acquire refused by a limit, with integer max and count."""
    assert answer == {"granted": False, "over_limit": {"limit": limit, "max": max_, "count": count}}, answer
    for k in ("max", "count"):
        assert type(answer["over_limit"][k]) is int, (k, answer)


def upload_line(owner, i, extra=""):
    """A one-target request of the shipped matrix on its own path /kit/limits/f<i>: requests on other paths never
    conflict, so only a limit refuses it."""
    op, role = _one_target_op()
    return acquire_line(owner, op, {role: f"/kit/limits/f{i}"}, extra)


def test_a_namespaces_own_limit_refuses_the_next_lock_and_holds_nothing(driver, library, ns):
    set_limits(library, ns, "2 - -")
    d = driver()
    for i in range(2):
        check_grant(d.ask(upload_line("alice", i)))
    check_over_limit(d.ask(upload_line("bob", 2)), "locks", 2, 2)
    assert d.ask(f"locks {quote('/kit/limits/f2')}") == {"locks": []}
    assert len(d.ask("locks")["locks"]) == 2
    assert library("limits_ro", ns, read_only=True) == ["limits", "2 - -", 2, 0, 2, "alice"]


def test_the_limit_on_one_owners_locks(driver, library, ns):
    set_limits(library, ns, "- - 1")
    d = driver()
    check_grant(d.ask(upload_line("alice", 0)))
    check_over_limit(d.ask(upload_line("alice", 1)), "owner_locks", 1, 1)
    assert d.ask(f"locks {quote('/kit/limits/f1')}") == {"locks": []}
    check_grant(d.ask(upload_line("bob", 1)))


@pytest.fixture
def default_limits(redis):
    """set(text): pl:limits for this test; deleted at its end, passed or not (the server is the session's)."""
    yield lambda text: redis("SET", "pl:limits", text)
    assert redis("DEL", "pl:limits") in (0, 1)


def test_the_default_limit_read_from_pl_limits_is_enforced(driver, default_limits, library, ns):
    default_limits("2 - -")
    d = driver()  # a new process: it reads pl:limits with its first acquire
    for i in range(2):
        check_grant(d.ask(upload_line("alice", i)))
    check_over_limit(d.ask(upload_line("alice", 2)), "locks", 2, 2)
    assert d.ask(f"locks {quote('/kit/limits/f2')}") == {"locks": []}
    # The namespace's own limits replace the default whole.
    set_limits(library, ns, "- - -")
    check_grant(d.ask(upload_line("alice", 2)))


def test_a_waiting_request_refused_by_a_limit_is_answered_at_once(driver, cpp, library, ns):
    set_limits(library, ns, "1 - -")
    d, observer = driver(), cpp()
    check_grant(d.ask(upload_line("alice", 0)))
    start = time.monotonic()
    check_over_limit(d.ask(upload_line("bob", 1, f"wait={WAIT_MS}")), "locks", 1, 1)
    took = time.monotonic() - start
    assert took < WAIT_MS / 1000 / 2, f"answered after {took:.2f} s of a {WAIT_MS} ms wait"
    assert observer.ask("waiters") == {"waiters": []}


def test_a_waiter_over_the_limit_on_places_is_answered_at_once(driver, cpp, library, ns):
    """One place in line allowed: a second fair waiter is refused at once; the first is still let in."""
    set_limits(library, ns, "- 1 -")
    (h, ht), (r, rt) = held_and_refused()
    a, b, c, observer = driver(), driver(), driver(), cpp()
    g = check_grant(a.ask(acquire_line("a", h, ht)))
    b.send(acquire_line("b", r, rt, f"wait={LONG}"))
    in_line(observer, "b")
    start = time.monotonic()
    check_over_limit(c.ask(acquire_line("c", r, rt, f"wait={WAIT_MS}")), "places", 1, 1)
    took = time.monotonic() - start
    assert took < WAIT_MS / 1000 / 2, f"answered after {took:.2f} s of a {WAIT_MS} ms wait"
    assert [w["owner"] for w in observer.ask("waiters")["waiters"]] == ["b"]
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    check_grant(b.answer())
