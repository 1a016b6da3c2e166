"""Conversion (docs/design.md#conversion, docs/lua-protocol.md#convert): the
driver's `convert ID TOKEN OP PATH… [ttl=] [wait=] [fair=] [key=]` against
the C++ engine (`pathlock shell`) on one namespace. A conversion is judged as
an acquire of its new operation and targets (matrix-cases.json's cases, made
by converting a lock); a lock converted on one side is seen converted on the
other; a refused one is unchanged; a waiting conversion is listed with the
lock it converts; two converters that would wait for each other: the later
one is answered would_deadlock. Drivers without the "convert" feature skip."""
import pytest

import cases
from kitlib import acquire_line, quote, wait_until
from test_locks import check_conflict, check_grant
from test_waiting import LONG, held_and_refused


def convert_line(grant, op, targets, extra=""):
    """`convert ID TOKEN OP PATH [DST_PATH] ...` with every word quoted; targets in role order."""
    paths = " ".join(quote(p) for p in targets.values())
    return f"convert {grant['id']} {quote(grant['token'])} {op} {paths} {extra}".rstrip()


def lock_of(side, grant):
    """The listed lock of `grant` (through `side`), or None."""
    return next((l for l in side.ask("locks")["locks"] if l["id"] == grant["id"]), None)


def _ids(c):
    return "{held_op}-{requested_op}-{relation}-{granted}".format(**c)


@pytest.mark.parametrize("case", cases.sample(False) + cases.sample(True), ids=_ids)
@pytest.mark.parametrize("holder", ["cpp", "driver"])
def test_a_conversion_is_judged_as_an_acquire(driver, cpp, needs, case, holder):
    needs("convert")
    d, c = driver(), cpp()
    first = c if holder == "cpp" else d
    held = check_grant(first.ask(acquire_line("first", case["held_op"], case["held_targets"])))
    start = {role: "/kit-convert/from/" + role for role in case["requested_targets"]}
    mine = check_grant(d.ask(acquire_line("second", case["requested_op"], start)))
    before = lock_of(c, mine)
    r = d.ask(convert_line(mine, case["requested_op"], case["requested_targets"]))
    if case["granted"]:
        g = check_grant(r)
        assert (g["id"], g["token"]) == (mine["id"], mine["token"]) and g["fence"] > mine["fence"] > held["fence"]
        assert lock_of(c, mine)["targets"] == case["requested_targets"]
    else:
        conflict = check_conflict(r)
        assert not r.get("would_deadlock")
        assert (conflict["id"], conflict["owner"], conflict["path"], conflict["relation"]) == (
            held["id"], "first", case["held_path"], case["relation"])
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


def test_the_later_of_two_converters_waiting_for_each_other_is_would_deadlock(driver, cpp, needs):
    needs("convert")
    pair = cases.two_holders()
    if pair is None:
        pytest.skip("the matrix has no two operations that hold together and refuse a third")
    h1, h2, r, path = pair
    d, c = driver(), cpp()
    a = check_grant(c.ask(acquire_line("a", h1, {cases.role_of(h1): path})))
    b = check_grant(d.ask(acquire_line("b", h2, {cases.role_of(h2): path})))
    c.send(convert_line(a, r, {cases.role_of(r): path}, f"wait={LONG}"))
    wait_until("a's conversion waits in line",
               lambda: [w.get("converts") for w in d.ask("waiters")["waiters"]] == [a["id"]])
    answer = d.ask(convert_line(b, r, {cases.role_of(r): path}, f"wait={LONG}"))
    assert answer.get("would_deadlock") is True and check_conflict(answer)["id"] == a["id"]
    assert lock_of(d, b)["op"] == h2
    assert d.ask(f"release {b['id']} {quote(b['token'])}") == {"released": True}
    assert check_grant(c.answer())["id"] == a["id"]
