"""The calls a driver's client sends follow the library's contract (protocol
4.4, docs/lua-protocol.md#arguments-by-name): the keys of the contract's
pattern and suffixes, every function's arguments in the order its entry
names them (acquire with all of its optional groups), the reservation of
each attempt from the contract's "waiting" numbers. Watched with MONITOR on
the kit's redis-server while the driver waits, so it holds for every client,
the C++ engine's included; drivers with the "protocol" feature also show the
arguments they build for a given request, compared field by field."""
import json
import re
import threading

import pytest

from kitlib import Library, Resp, acquire_line, quote, wait_until
from test_locks import check_grant
from test_waiting import held_and_refused

OWNER = "kit-protocol"
TTL_MS = 5000


@pytest.fixture
def library(redis_server):
    r = Resp(redis_server.port)
    yield Library(r)
    r.close()


def entry(contract, fn):
    found = [f for f in contract["functions"] if f["name"] == fn]
    assert len(found) == 1, f"the contract has no one entry for {fn}"
    return found[0]


def roles_of(contract, op):
    found = [o["roles"] for o in contract["operations"] if o["name"] == op]
    assert found, f"the contract has no operation {op}"
    return found[0]


def names(contract, fn, op=None):
    """The argument names of a call of fn: its args with "path..." one name per
    role of op (path:ROLE), then every optional group."""
    out = []
    for a in entry(contract, fn)["args"]:
        out += [f"path:{r}" for r in roles_of(contract, op)] if a == "path..." else [a]
    for group in entry(contract, fn)["optional"]:
        out += group
    return out


def reservation(contract, left_ms):
    """What an in-line attempt asks for with left_ms of its wait left (the contract's rule)."""
    w = contract["waiting"]
    return 0 if left_ms <= 0 else min(left_ms + w["recheck_ms"], w["max_reservation_ms"])


_ESCAPE = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", '"': '"', "\\": "\\"}


def _words(line):
    """The quoted words of one MONITOR line (sdscatrepr's escapes undone)."""
    out = []
    for m in re.finditer(r'"((?:[^"\\]|\\.)*)"', line):
        s = re.sub(r'\\x([0-9a-f]{2})|\\(.)',
                   lambda e: chr(int(e.group(1), 16)) if e.group(1) else _ESCAPE.get(e.group(2), e.group(2)), m.group(1))
        out.append(s)
    return out


class Monitor:
    """MONITOR on the server, on its own thread: every FCALL and FCALL_RO a
    client (not a script) sent, as [function, numkeys, keys, args]."""

    def __init__(self, port):
        self.resp = Resp(port)
        self.resp.sock.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
        assert self.resp._line() == b"+OK"
        self.calls, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while not self.stop.is_set():
                line = self.resp._line().decode("utf-8", "replace")
                if " lua] " in line:
                    continue
                w = _words(line)
                if w and w[0].upper() in ("FCALL", "FCALL_RO"):
                    n = int(w[2])
                    self.calls.append([w[1], n, w[3:3 + n], w[3 + n:]])
        except (OSError, ConnectionError):
            pass

    def close(self):
        self.stop.set()
        self.resp.close()
        self.thread.join(10)


def check_call(contract, keys, prefix, call):
    """One call against the function's entry: its keys and its argument count; returns its arguments by name."""
    fn, n, got_keys, args = call
    assert fn.startswith(prefix), f"a call of another library's function {fn}"
    e = entry(contract, fn[len(prefix):])
    assert n == e["keys"], f"{fn}: {n} keys, the contract says {e['keys']}"
    if n:
        assert got_keys == keys, f"{fn}: keys {got_keys}, the contract's are {keys}"
    op = args[e["args"].index("op")] if "op" in e["args"] else None
    want = names(contract, fn[len(prefix):], op)
    if fn.endswith("acquire") or not e["optional"]:
        assert len(args) == len(want), f"{fn}: {len(args)} arguments {args}, the contract names {want}"
    return dict(zip(want, args))


def watched_wait(driver, cpp, redis_server, wait_ms):
    """The driver's acquire refused after waiting wait_ms behind a conflicting
    lock the C++ engine holds, watched: the calls the driver sent."""
    (h, ht), (r, rt) = held_and_refused()
    holder, d = cpp(), driver()
    check_grant(holder.ask(acquire_line("holder", h, ht, f"ttl={TTL_MS * 4}")))
    assert d.ask("hello")["client"]
    watch = Monitor(redis_server.port)
    try:
        answer = d.ask(acquire_line(OWNER, r, rt, f"ttl={TTL_MS} wait={wait_ms}"))
        assert answer.get("granted") is False, answer
        d.ask("locks")  # one more call: every call of the wait has reached the server before it
        wait_until("MONITOR shows the driver's list call", lambda: any(c[0].endswith("list") or
                                                                       c[0].endswith("list_ro")
                                                                       for c in watch.calls))
    finally:
        watch.close()
    return r, rt, watch.calls


def test_every_call_the_driver_sends_follows_the_contract(driver, cpp, redis_server, library, ns):
    c = library.contract
    wait_ms = 2300
    op, targets, calls = watched_wait(driver, cpp, redis_server, wait_ms)
    attempts = []
    for call in calls:
        by_name = check_call(c, library.keys(ns), library.prefix, call)
        if call[0].endswith("acquire"):
            attempts.append(by_name)
    assert len(attempts) >= 2, f"a wait of {wait_ms} ms made {len(attempts)} attempts"
    for a in attempts:
        assert (a["owner"], a["op"], a["ttl_ms"], a["fair"]) == (OWNER, op, str(TTL_MS), "1"), a
        assert [a[f"path:{r}"] for r in roles_of(c, op)] == list(targets.values()), a
        assert a["reenter_id"] == a["reenter_token"] == a["idempotency_key"] == "", a
        assert re.fullmatch(r"\d*", a["deadline_ms"]), a
        assert a["default_limits"] == "", a
    assert len({a["waiter_id"] for a in attempts}) == 1 and attempts[0]["waiter_id"], "one place in line"
    reserves = [int(a["reserve_ms"]) for a in attempts]
    # The first attempt has more than max_reservation_ms - recheck_ms left: it asks for the cap.
    assert reserves[0] == reservation(c, wait_ms), reserves
    assert reserves[-1] == 0, f"the attempt at the deadline keeps no place: {reserves}"
    assert all(0 < r <= reserves[0] for r in reserves[:-1]), reserves
    assert reserves == sorted(reserves, reverse=True), f"the time left only shrinks: {reserves}"


LEFTS = (1, 150, 1799, 1800, 1801, 2500, 60000)


@pytest.mark.parametrize("wait_ms", [0, 700])
def test_the_driver_builds_its_calls_from_the_contract(driver, needs, library, ns, wait_ms):
    needs("protocol")
    c = library.contract
    _, (op, targets) = held_and_refused()
    paths = " ".join(quote(p) for p in targets.values())
    got = driver().ask(f"protocol {op} {paths} wait={wait_ms}")
    assert got.get("keys") == library.keys(ns), got
    in_line = wait_ms > 0
    values = {"owner": "kit-owner", "op": op, "ttl_ms": "1000", "new_id": "kit-id",
              "new_token": "kit-token", "reenter_id": "", "reenter_token": "", "idempotency_key": "",
              "fair": "1", "waiter_id": "kit-waiter" if in_line else "",
              "reserve_ms": str(reservation(c, wait_ms) if in_line else 0), "deadline_ms": "", "default_limits": ""}
    values.update({f"path:{r}": p for r, p in zip(roles_of(c, op), targets.values())})
    want = [values[n] for n in names(c, "acquire", op)]
    assert got.get("acquire_args") == want, json.dumps(got)
    assert got.get("reserve_ms") == {str(left): reservation(c, left) for left in LEFTS}, got
