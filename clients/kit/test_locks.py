"""The line protocol's lock commands (docs/cli.md `pathlock shell`): the shared
vectors, reentry by proof, idempotency keys, held, renew, release, fences and
listing, with the JSON value types every client answers."""
import subprocess

import pytest

import cases
from conftest import load_vector, matrix_file
from kitlib import acquire_line, answers, quote


def check_grant(g):
    assert g.get("granted") is True, g
    assert isinstance(g["id"], str) and g["id"] and isinstance(g["token"], str) and g["token"], g
    for k in ("fence", "holds", "expires_in_ms"):
        assert isinstance(g[k], int) and not isinstance(g[k], bool), (k, g)
    return g


def check_conflict(r):
    assert r.get("granted") is False, r
    c = r["conflict"]
    for k in ("id", "op", "role", "path", "owner", "requested_role", "requested_path", "relation"):
        assert isinstance(c[k], str), (k, r)
    assert isinstance(c["expires_in_ms"], int) and isinstance(c["queued"], bool), r
    assert c["relation"] in ("same", "held_ancestor", "held_descendant"), r
    return c


def test_hello_names_the_client(hello):
    assert hello["client"] and len(set(hello["features"])) == len(hello["features"])


def test_matrix_cases(driver):
    """Every case derived from the matrix: granted exactly when the matrix says, and a refusal names the lock."""
    d = driver()
    failures = []
    for case in cases.all_cases():
        held = check_grant(d.ask(acquire_line("holder", case["held_op"], case["held_targets"])))
        r = d.ask(acquire_line("requester", case["requested_op"], case["requested_targets"]))
        if r.get("granted") != case["granted"]:
            failures.append((case, r))
        elif not r["granted"]:
            c = check_conflict(r)
            if (c["id"], c["owner"], c["role"], c["path"], c["requested_role"], c["relation"]) != (
                    held["id"], "holder", case["held_role"], case["held_path"], case["requested_role"],
                    case["relation"]):
                failures.append((case, r))
        for g in (held, r):
            if g.get("granted"):
                assert d.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    assert failures == []
    assert d.ask("locks") == {"locks": []}


PATHS = load_vector("paths.json")


def _one_target_op():
    c = cases.compatible()
    return c["held_op"], next(iter(c["held_targets"]))


@pytest.mark.parametrize("case", PATHS["normalize"], ids=lambda c: c["input_hex"][:40])
def test_path_is_normalised(driver, case):
    d = driver()
    op, role = _one_target_op()
    g = check_grant(d.ask(acquire_line("o", op, {role: case["input"]})))
    locks = d.ask("locks")["locks"]
    assert [(l["id"], l["targets"]) for l in locks] == [(g["id"], {role: case["canonical"]})]
    assert d.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}


def _sendable(raw):
    return b"\n" not in raw and b"\r" not in raw


@pytest.mark.parametrize("case", [c for c in PATHS["invalid"] if _sendable(bytes.fromhex(c["input_hex"]))],
                         ids=lambda c: c["input_hex"][:40])
def test_bad_path_is_refused(driver, case):
    """A path the vectors call invalid is an {"error"}, nothing is held, and the driver carries on."""
    d = driver()
    op, _ = _one_target_op()
    raw = bytes.fromhex(case["input_hex"])
    quoted = b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
    r = d.ask(b"acquire o " + op.encode() + b" " + quoted)
    assert isinstance(r.get("error"), str) and r["error"], (case["reason"], r)
    assert d.ask("locks") == {"locks": []}


def test_reentry_by_proof(driver):
    d = driver()
    c = cases.conflict()
    line = acquire_line("alice", c["held_op"], c["held_targets"])
    g = check_grant(d.ask(line))
    assert g["holds"] == 1
    again = check_grant(d.ask(f"{line} reenter={g['id']} token={g['token']}"))
    assert (again["id"], again["token"], again["fence"], again["holds"]) == (g["id"], g["token"], g["fence"], 2)
    # The owner's name is no proof: the owner's conflicting request is refused by its own lock.
    assert check_conflict(d.ask(acquire_line("alice", c["requested_op"], c["requested_targets"])))["id"] == g["id"]
    assert d.ask(f"{line} reenter={g['id']} token=wrong") == {"granted": False, "not_holder": True}
    assert d.ask(f"{line} reenter=nosuchlock token={g['token']}") == {"granted": False, "not_holder": True}
    # Held twice: the first release leaves it held, the second ends it, a third finds nothing.
    assert answers(d, g, "release {proof}", "held {proof}", "release {proof}", "held {proof}", "release {proof}") == [
        {"released": True}, {"held": True}, {"released": True}, {"held": False}, {"released": False}]


def test_idempotency_key_returns_the_same_lock(driver):
    d = driver()
    c = cases.compatible()
    line = acquire_line("alice", c["held_op"], c["held_targets"])
    g = check_grant(d.ask(f"{line} key=kit-retry-1"))
    again = check_grant(d.ask(f"{line} key=kit-retry-1"))
    assert (again["id"], again["token"], again["fence"], again["holds"]) == (g["id"], g["token"], g["fence"], 1)
    other = d.ask(acquire_line("mallory", c["held_op"], c["held_targets"], "key=kit-retry-1"))
    assert isinstance(other.get("error"), str), other
    assert [l["id"] for l in d.ask("locks")["locks"]] == [g["id"]]
    assert "error" in d.ask(f"{line} key=kit-retry-1 reenter={g['id']} token={g['token']}")


def test_held_and_renew(driver):
    d = driver()
    c = cases.compatible()
    g = check_grant(d.ask(acquire_line("alice", c["held_op"], c["held_targets"], "ttl=5000")))
    assert g["expires_in_ms"] <= 5000
    assert answers(d, g, "held {proof}", "held {id} wrong", "renew {proof} ttl=600000") == [
        {"held": True}, {"held": False}, {"renewed": True}]
    (lock,) = d.ask("locks")["locks"]
    assert lock["expires_in_ms"] > 5000  # the new lease, a minute past the old one at least
    assert answers(d, g, "renew {id} wrong", "renew {proof}", "force-release {id}", "held {proof}", "force-release {id}") == [
        {"renewed": False}, {"renewed": True}, {"released": True}, {"held": False}, {"released": False}]


def test_fences_never_go_backwards(driver):
    d1, d2 = driver(), driver()
    c = cases.conflict()
    fences = []
    for i in range(6):
        d = (d1, d2)[i % 2]
        g = check_grant(d.ask(acquire_line(f"o{i}", c["held_op"], c["held_targets"])))
        fences.append(g["fence"])
        assert d.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    assert fences == sorted(fences) and len(set(fences)) == len(fences), fences


def test_listing_pages(driver):
    d = driver()
    op, role = _one_target_op()
    ids = [check_grant(d.ask(acquire_line("lister", op, {role: f"/kit/list/f{i}"})))["id"] for i in range(7)]
    check_grant(d.ask(acquire_line("lister", op, {role: "/kit/other"})))
    whole = d.ask(quote("/kit/list").join(["locks ", ""]))["locks"]
    assert [l["id"] for l in whole] == ids  # fence order
    for l in whole:
        assert l["owner"] == "lister" and l["op"] == op and l["holds"] == 1 and isinstance(l["fence"], int)
        assert list(l["targets"]) == [role] and isinstance(l["expires_in_ms"], int)
    seen, after = [], ""
    while True:
        page = d.ask(f"locks {quote('/kit/list')} limit=3" + (f" after={after}" if after else ""))
        assert len(page["locks"]) <= 3 and "next" in page, page
        seen += [l["id"] for l in page["locks"]]
        if page["next"] is None:
            break
        assert isinstance(page["next"], str) and page["next"]
        after = page["next"]
    assert seen == ids
    assert d.ask(f"locks {quote('/kit/none')}") == {"locks": []}
    assert len(d.ask("locks")["locks"]) == 8


BAD_LINES = [
    "frobnicate", "acquire", "acquire alice", "acquire alice no_such_operation /p", "release onlyid",
    "renew a b ttl=x", "held a", "locks limit=0", "locks limit=abc", "locks after=5", 'acquire "alice',
    'locks "/p\\q"', "force-release", "acquire alice {op} /kit/a ttl=-5", "acquire alice {op} /kit/a ttl=1e3",
    "acquire alice {op} /kit/a fair=maybe", "acquire alice {op} /kit/a reenter=x",
    "acquire alice {op} /kit/a key=has space", "acquire alice {op} relative/path", "acquire alice {op} /kit/a /kit/b /kit/c",
    "acquire alice {op} /kit/a\r",
]


@pytest.mark.parametrize("line", BAD_LINES)
def test_bad_input_is_an_error_and_the_driver_carries_on(driver, line):
    d = driver()
    op, _ = _one_target_op()
    r = d.ask(line.replace("{op}", op))
    assert set(r) == {"error"} and isinstance(r["error"], str) and r["error"], r
    assert d.ask("held nosuch token") == {"held": False}
    assert d.ask("locks") == {"locks": []}


def test_blank_and_comment_lines_get_no_answer(driver):
    d = driver()
    d.send("")
    d.send("   # a comment")
    assert d.ask("held nosuch token") == {"held": False}


def test_matrix_option(driver, driver_cmd, hello, redis_server, ns):
    """--matrix FILE where the driver supports other matrices; exit status 2 where it does not."""
    if "matrix" in hello["features"]:
        d = driver(extra=("--matrix", matrix_file()))
        c = cases.compatible()
        check_grant(d.ask(acquire_line("m", c["held_op"], c["held_targets"])))
        return
    done = subprocess.run(driver_cmd + ["--redis", redis_server.url, "--namespace", ns, "--matrix", matrix_file()],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert done.returncode == 2, done
