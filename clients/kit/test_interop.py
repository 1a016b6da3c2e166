"""The driver and the C++ engine (`pathlock shell --backend redis`) on one
server and namespace: each refuses the other where the matrix says, each
lists the other's locks, a release on one side wakes a waiter on the other."""
import pytest

import cases
from kitlib import acquire_line, quote
from test_locks import check_conflict, check_grant
from test_waiting import LONG, held_and_refused, in_line


def _ids(c):
    return "{held_op}-{requested_op}-{relation}-{granted}".format(**c)


@pytest.mark.parametrize("case", cases.sample(False) + cases.sample(True), ids=_ids)
@pytest.mark.parametrize("holder", ["cpp", "driver"])
def test_each_refuses_the_other_where_the_matrix_says(driver, cpp, case, holder):
    d, c = driver(), cpp()
    first, second = (c, d) if holder == "cpp" else (d, c)
    held = check_grant(first.ask(acquire_line("first", case["held_op"], case["held_targets"])))
    r = second.ask(acquire_line("second", case["requested_op"], case["requested_targets"]))
    if case["granted"]:
        check_grant(r)
    else:
        conflict = check_conflict(r)
        assert (conflict["id"], conflict["owner"], conflict["path"], conflict["relation"]) == (
            held["id"], "first", case["held_path"], case["relation"])


def test_each_lists_the_others_locks(driver, cpp):
    d, c = driver(), cpp()
    case = cases.compatible()
    g1 = check_grant(d.ask(acquire_line("driver", case["held_op"], case["held_targets"])))
    g2 = check_grant(c.ask(acquire_line("cpp", case["requested_op"], case["requested_targets"])))
    for side in (d, c):
        locks = side.ask("locks")["locks"]
        assert [(l["id"], l["owner"], l["fence"]) for l in locks] == [
            (g1["id"], "driver", g1["fence"]), (g2["id"], "cpp", g2["fence"])]
    assert c.ask(f"held {g1['id']} {quote(g1['token'])}") == {"held": True}
    assert d.ask(f"held {g2['id']} {quote(g2['token'])}") == {"held": True}
    assert c.ask(f"release {g1['id']} {quote(g1['token'])}") == {"released": True}  # a lock is its id and token
    assert d.ask("locks")["locks"][0]["id"] == g2["id"]


@pytest.mark.parametrize("waiter", ["cpp", "driver"])
def test_a_release_on_one_side_wakes_a_waiter_on_the_other(driver, cpp, waiter):
    (h, ht), (r, rt) = held_and_refused()
    d, c, observer = driver(), cpp(), cpp()
    holder, waiting = (d, c) if waiter == "cpp" else (c, d)
    g = check_grant(holder.ask(acquire_line("holder", h, ht)))
    waiting.send(acquire_line("waiter", r, rt, f"wait={LONG}"))
    in_line(observer, "waiter")
    assert holder.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    assert check_grant(waiting.answer())["fence"] > g["fence"]
