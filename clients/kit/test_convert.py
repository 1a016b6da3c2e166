"""Conversion (docs/design.md#conversion, docs/lua-protocol.md#convert): the
driver's `convert ID TOKEN OP PATH… [ttl=] [wait=] [fair=] [key=]` against
the C++ engine (`pathlock shell`) on one namespace. A conversion is judged as
an acquire of its new operation and targets (matrix-cases.json's conversion
cases); a lock converted on one side is seen converted on the
other; a refused one is unchanged; a waiting conversion is listed with the
lock it converts; two converters that would wait for each other: the later
one is answered would_deadlock. A conversion's dry run (`blockers OP PATH…
converts=ID [fair=] [limit=]`, docs/lua-protocol.md#blockers-read-only)
leaves the lock itself and the places in line it refuses out, and answers
as the C++ shell does. Drivers without the "convert" feature skip."""
import json

import pytest

import cases
from kitlib import acquire_line, quote, wait_until
from test_locks import check_conflict, check_grant
from test_waiting import LONG, held_and_refused, in_line

UNKNOWN = "kit-no-such-lock-0123456789"  # a well-formed id no lock has


def convert_line(grant, op, targets, extra=""):
    """`convert ID TOKEN OP PATH [DST_PATH] ...` with every word quoted; targets in role order."""
    paths = " ".join(quote(p) for p in targets.values())
    return f"convert {grant['id']} {quote(grant['token'])} {op} {paths} {extra}".rstrip()


def lock_of(side, grant):
    """The listed lock of `grant` (through `side`), or None."""
    return next((l for l in side.ask("locks")["locks"] if l["id"] == grant["id"]), None)


def _ids(c):
    return "{from_op}-to-{to_op}-beside-{held_op}-{relation}-{outcome}".format(**c)


@pytest.mark.parametrize("case", cases.conversion_sample(), ids=_ids)
@pytest.mark.parametrize("holder", ["cpp", "driver"])
def test_a_conversion_is_judged_as_an_acquire(driver, cpp, needs, case, holder):
    """matrix-cases.json's conversion cases (kind "beside"): the converting lock, often on the path under
    test itself, converted beside a held lock gets the acquire's verdict and refusal."""
    needs("convert")
    d, c = driver(), cpp()
    first = c if holder == "cpp" else d
    held = check_grant(first.ask(acquire_line("first", case["held_op"], case["held_targets"])))
    mine = check_grant(d.ask(acquire_line("second", case["from_op"], case["from_targets"])))
    before = lock_of(c, mine)
    r = d.ask(convert_line(mine, case["to_op"], case["to_targets"]))
    if case["outcome"] == "granted":
        g = check_grant(r)
        assert (g["id"], g["token"]) == (mine["id"], mine["token"]) and g["fence"] > mine["fence"] > held["fence"]
        assert lock_of(c, mine)["targets"] == case["to_targets"]
    else:
        conflict = check_conflict(r)
        assert not r.get("would_deadlock")
        assert (conflict["id"], conflict["owner"], conflict["path"], conflict["relation"]) == (
            held["id"], "first", case["held_targets"][case["held_role"]], case["relation"])
        after = lock_of(c, mine)
        assert (after["op"], after["targets"], after["fence"]) == (before["op"], before["targets"], before["fence"])


def test_a_converted_lock_refuses_what_its_new_operation_refuses(driver, cpp, needs):
    needs("convert")
    (h, ht), (r, rt) = held_and_refused()
    d, c = driver(), cpp()
    g = check_grant(d.ask(acquire_line("d", r, {role: "/kit-convert/elsewhere/" + role for role in rt})))
    converted = check_grant(d.ask(convert_line(g, h, ht)))
    assert converted["id"] == g["id"] and converted["fence"] > g["fence"]
    assert check_conflict(c.ask(acquire_line("c", r, rt)))["id"] == g["id"]
    assert lock_of(c, g)["op"] == h
    assert d.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    check_grant(c.ask(acquire_line("c", r, rt)))


def test_a_wrong_proof_is_not_holder_and_changes_nothing(driver, cpp, needs):
    needs("convert")
    (h, ht), _ = held_and_refused()
    d, c = driver(), cpp()
    g = check_grant(d.ask(acquire_line("d", h, ht)))
    assert d.ask(convert_line(dict(g, token=g["token"] + "x"), h, ht)) == {"granted": False, "not_holder": True}
    assert lock_of(c, g)["fence"] == g["fence"]
    assert "error" in d.ask(f"convert {g['id']} {quote(g['token'])} no-such-operation /x")


def test_a_waiting_conversion_is_listed_and_granted_when_the_holder_leaves(driver, cpp, needs):
    needs("convert")
    (h, ht), (r, rt) = held_and_refused()
    d, c = driver(), cpp()
    blocker = check_grant(c.ask(acquire_line("c", h, ht)))
    g = check_grant(d.ask(acquire_line("d", r, {role: "/kit-convert/waiting/" + role for role in rt})))
    d.send(convert_line(g, r, rt, f"wait={LONG}"))
    wait_until("the conversion waits in line",
               lambda: [w.get("converts") for w in c.ask("waiters")["waiters"]] == [g["id"]])
    assert c.ask(f"release {blocker['id']} {quote(blocker['token'])}") == {"released": True}
    converted = check_grant(d.answer())
    assert converted["id"] == g["id"] and converted["fence"] > blocker["fence"]
    assert c.ask("waiters") == {"waiters": []}


def two_holders():
    """cases.two_holders(), or the test skipped when the matrix has none."""
    pair = cases.two_holders()
    if pair is None:
        pytest.skip("the matrix has no two operations that hold together and refuse a third")
    return pair


def hold(side, owner, op, path):
    """A grant of one-target `op` on `path` through `side`."""
    return check_grant(side.ask(acquire_line(owner, op, {cases.role_of(op): path})))


def test_the_later_of_two_converters_waiting_for_each_other_is_would_deadlock(driver, cpp, needs):
    needs("convert")
    h1, h2, r, path = two_holders()
    d, c = driver(), cpp()
    a = hold(c, "a", h1, path)
    b = hold(d, "b", h2, path)
    c.send(convert_line(a, r, {cases.role_of(r): path}, f"wait={LONG}"))
    wait_until("a's conversion waits in line",
               lambda: [w.get("converts") for w in d.ask("waiters")["waiters"]] == [a["id"]])
    answer = d.ask(convert_line(b, r, {cases.role_of(r): path}, f"wait={LONG}"))
    assert answer.get("would_deadlock") is True and check_conflict(answer)["id"] == a["id"]
    assert lock_of(d, b)["op"] == h2
    assert d.ask(f"release {b['id']} {quote(b['token'])}") == {"released": True}
    assert check_grant(c.answer())["id"] == a["id"]


def without_timing(answer):
    """A blockers answer without what runs down (expires_in_ms, waited_ms), its rows in one order (drivers
    need not order rows alike)."""
    if "blockers" not in answer:
        return answer
    rows = [{k: v for k, v in b.items() if k not in ("expires_in_ms", "waited_ms")} for b in answer["blockers"]]
    return dict(answer, blockers=sorted(rows, key=lambda b: json.dumps(b, sort_keys=True)))


def dry_run(d, c, line):
    """The driver's answer to a blockers line, which must be the C++ shell's (`c`) for the same line."""
    mine, cpp = d.ask(line), c.ask(line)
    assert without_timing(mine) == without_timing(cpp), f"{line}: the driver answers {mine}, the C++ shell {cpp}"
    assert "blockers" in mine, f"{line}: {mine}"
    return mine


def ids(answer):
    return sorted(b["id"] for b in answer["blockers"])


def test_a_conversions_dry_run_leaves_its_own_lock_out(driver, cpp, needs):
    needs("convert")
    needs("blockers")
    h1, h2, r, path = two_holders()
    d, c = driver(), cpp()
    a = hold(c, "a", h1, path)
    b = hold(c, "b", h2, path)
    line = f"blockers {r} {quote(path)}"
    plain = dry_run(d, c, line)
    assert ids(plain) == sorted([a["id"], b["id"]]) and plain["truncated"] is False
    assert ids(dry_run(d, c, f"{line} converts={a['id']}")) == [b["id"]]  # never the converting lock
    assert ids(dry_run(d, c, f"{line} converts={b['id']} fair=false limit=1")) == [a["id"]]
    assert without_timing(dry_run(d, c, f"{line} converts={UNKNOWN}")) == without_timing(plain)  # a plain blockers
    for bad in ("converts=", "converts=not_an_id", f"converts={a['id']} converts={a['id']}", f"converts={'a' * 65}"):
        assert "error" in d.ask(f"{line} {bad}") and "error" in c.ask(f"{line} {bad}"), bad


def test_a_conversions_dry_run_passes_over_the_places_its_lock_refuses(driver, cpp, needs):
    needs("convert")
    needs("blockers")
    triple = cases.fairness_triple()
    if triple is None:
        pytest.skip("the matrix has no operations H, R, X with H refusing R, admitting X, and R refusing X")
    h, r, x, path = triple
    d, c, waiter = driver(), cpp(), cpp()
    held = hold(c, "h", h, path)
    other = check_grant(c.ask(acquire_line("o", x, {cases.role_of(x): "/kit-convert/dry/elsewhere"})))
    waiter.send(acquire_line("w", r, {cases.role_of(r): path}, f"wait={LONG}"))
    in_line(c, "w")
    line = f"blockers {x} {quote(path)}"
    plain = dry_run(d, c, line)
    assert [(b["queued"], b["owner"], b["op"]) for b in plain["blockers"]] == [(True, "w", r)]
    # The held lock refuses the waiter: its conversion goes first.
    assert dry_run(d, c, f"{line} converts={held['id']}") == {"blockers": [], "truncated": False}
    # A lock elsewhere does not: the waiter refuses its conversion, unless it is unfair.
    assert without_timing(dry_run(d, c, f"{line} converts={other['id']}")) == without_timing(plain)
    assert dry_run(d, c, f"{line} converts={other['id']} fair=false") == {"blockers": [], "truncated": False}
    assert without_timing(dry_run(d, c, f"{line} converts={UNKNOWN}")) == without_timing(plain)
    assert c.ask(f"release {held['id']} {quote(held['token'])}") == {"released": True}
    check_grant(waiter.answer())
