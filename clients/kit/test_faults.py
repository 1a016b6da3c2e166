"""Faults (docs/clients.md "Fault behaviour"): a stalled server and a call's
deadline, a connection cut while a call is in flight (with and without an
idempotency key), a dropped wake-up subscription while waiting, a server
restart (with and without its data) while a keeper keeps a lock. Each test has
a redis-server of its own (it pauses and cuts it), with the library loaded.

The stall is `CLIENT PAUSE`: WRITE for acquire (FCALL), so that the kit can
still list and kill clients; ALL for `held` (FCALL_RO), for a fixed time.
Sync points are what the server shows (`CLIENT LIST`, the observer's
`waiters`); the time bounds are the documented deadline margins."""
import time

import pytest

from conftest import _load_library, cli
from kitlib import Driver, RedisServer, Resp, acquire_line, fresh_ns, quote, wait_until
from test_locks import check_grant
from test_waiting import in_line, held_and_refused

DEADLINE_MS = 200
# docs/clients.md: a call with a deadline answers within it plus 250 ms (Go's
# DeadlineMargin; Node and PHP keep within it too); the kit adds 250 ms for
# its pipes and a loaded machine.
MARGIN_MS = 250 + 250
PAUSE_MS = 3000  # longer than any deadline plus margin: the call is still stalled when it answers


@pytest.fixture
def server():
    s = RedisServer()
    try:
        _load_library(s)
        yield s
    finally:
        s.stop()


@pytest.fixture
def fault(server, driver_cmd, hello):
    """start(kind): a driver ("driver") or the C++ engine ("cpp") on the
    fault server and the test's namespace; the kit's own connection is
    .redis. Every process must exit 0 at end of input."""
    ns = fresh_ns("fault")
    procs = []

    class Fault:
        redis = Resp(server.port)
        port = server.port

        @staticmethod
        def start(kind="driver"):
            argv = driver_cmd if kind == "driver" else [cli(), "shell", "--backend", "redis"]
            d = Driver(argv, server.url, ns)
            procs.append(d)
            return d

    yield Fault
    Fault.redis("CLIENT", "UNPAUSE")
    Fault.redis.close()
    assert [d.close() for d in procs] == [0] * len(procs), "a driver exited with an error at end of input"


def _timed(d, line):
    start = time.monotonic()
    a = d.ask(line)
    return a, (time.monotonic() - start) * 1000


def check_timed_out(answer, took_ms):
    assert answer.get("timed_out") is True and isinstance(answer.get("error"), str), answer
    assert took_ms < DEADLINE_MS + MARGIN_MS, f"answered after {took_ms:.0f} ms (deadline {DEADLINE_MS} ms)"


def _clients(redis):
    rows = redis("CLIENT", "LIST").decode().splitlines()
    return [dict(kv.split("=", 1) for kv in row.split(" ") if "=" in kv) for row in rows]


def clients_blocked_in(redis, command):
    """The ids of the server's clients blocked (flag b: held back by the pause)
    in `command`; `cmd` alone names a client's last command, even one done."""
    return [f["id"] for f in _clients(redis) if f.get("cmd") == command and "b" in f.get("flags", "")]


def client_ids(redis):
    return [f["id"] for f in _clients(redis)]


def test_a_stalled_acquire_answers_at_its_deadline_and_leaves_no_lock(fault, needs):
    needs("deadline")
    (h, ht), _ = held_and_refused()
    d, observer = fault.start(), fault.start("cpp")
    assert d.ask("locks") == {"locks": []}  # connected, the contract read
    assert fault.redis("CLIENT", "PAUSE", str(PAUSE_MS), "WRITE") == "OK"
    check_timed_out(*_timed(d, acquire_line("a", h, ht, f"ttl=60000 deadline={DEADLINE_MS}")))
    assert fault.redis("CLIENT", "UNPAUSE") == "OK"
    # The paused call runs now: with deadline_ms it grants nothing; a client
    # without it releases the late grant. Either way no lock stays (its
    # lease of 60 s outlives the kit's patience of 10 s here).
    wait_until("no lock granted to nobody", lambda: observer.ask("locks")["locks"] == [], patience=10)
    check_grant(d.ask(acquire_line("a", h, ht)))  # the driver carries on


def test_a_stalled_held_answers_at_its_deadline(fault, needs):
    needs("deadline")
    (h, ht), _ = held_and_refused()
    d = fault.start()
    g = check_grant(d.ask(acquire_line("a", h, ht)))
    fault.redis("CLIENT", "PAUSE", str(1500), "ALL")  # read-only calls too; the kit waits it out
    check_timed_out(*_timed(d, f"held {g['id']} {quote(g['token'])} deadline={DEADLINE_MS}"))
    assert d.ask(f"held {g['id']} {quote(g['token'])}") == {"held": True}  # after the pause


def _cut_in_flight(fault, d, line):
    """Sends `line` (an acquire) while writes are paused, kills the
    driver's connection that carries it, resumes; returns the answer."""
    assert fault.redis("CLIENT", "PAUSE", str(20000), "WRITE") == "OK"
    d.send(line)
    ids = wait_until("the acquire in flight", lambda: clients_blocked_in(fault.redis, "fcall"), patience=10)
    assert len(ids) == 1, ids
    assert fault.redis("CLIENT", "KILL", "ID", ids[0]) == 1
    # Redis may free a killed client later (asynchronously): resumed before
    # that, it would still run the paused call and could even deliver its reply.
    wait_until("the killed connection gone", lambda: ids[0] not in client_ids(fault.redis), patience=10)
    assert fault.redis("CLIENT", "UNPAUSE") == "OK"
    return d.answer()


def test_a_keyed_acquire_cut_in_flight_is_sent_again_once(fault):
    (h, ht), _ = held_and_refused()
    d, observer = fault.start(), fault.start("cpp")
    assert d.ask("locks") == {"locks": []}
    g = check_grant(_cut_in_flight(fault, d, acquire_line("a", h, ht, "key=cut-1")))
    assert [l["id"] for l in observer.ask("locks")["locks"]] == [g["id"]]
    again = check_grant(d.ask(acquire_line("a", h, ht, "key=cut-1")))
    assert (again["id"], again["fence"]) == (g["id"], g["fence"])


def test_an_unkeyed_acquire_cut_in_flight_is_an_error_and_takes_nothing(fault):
    (h, ht), _ = held_and_refused()
    d, observer = fault.start(), fault.start("cpp")
    assert d.ask("locks") == {"locks": []}
    a = _cut_in_flight(fault, d, acquire_line("a", h, ht))
    # The call never ran (it was cut while paused): a client that reports it
    # and does not send it again leaves nothing; a silent retry would grant.
    assert isinstance(a.get("error"), str) and "granted" not in a, a
    assert observer.ask("locks") == {"locks": []}
    check_grant(d.ask(acquire_line("a", h, ht)))  # the driver carries on


def test_a_waiter_whose_subscription_drops_is_still_granted(fault):
    (h, ht), (r, rt) = held_and_refused()
    a, b, observer = fault.start(), fault.start(), fault.start("cpp")
    g = check_grant(a.ask(acquire_line("a", h, ht)))
    b.send(acquire_line("b", r, rt, "wait=30000"))
    in_line(observer, "b")
    subscribed = lambda: fault.redis("CLIENT", "LIST", "TYPE", "pubsub").decode().strip()
    wait_until("the waiter's wake-up subscription", subscribed, patience=10)
    assert fault.redis("CLIENT", "KILL", "TYPE", "pubsub") >= 1
    assert a.ask(f"release {g['id']} {quote(g['token'])}") == {"released": True}
    w = check_grant(b.answer(patience=30))
    assert w["fence"] > g["fence"]
    assert observer.ask("waiters") == {"waiters": []}


# A server restart while a keeper runs (`keep`, docs/cli.md). The lease is
# short, so that the restart is a real part of it; the downtime must be well
# inside it (else the check proves nothing and says so).
KEEP_TTL_MS = 1500
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")  # every write on disk before its reply
# docs/clients.md: after a restart that lost the lock, the keeper reports the
# lease lost within its TTL plus this margin (a renewal is due every third of
# the TTL; the client reconnects and loads the library again first).
LOST_MARGIN_MS = 1500


@pytest.fixture
def keep_fault(driver_cmd, hello, needs):
    """start(extra): a redis-server of its own (arguments `extra`, the library
    loaded) and a driver on it; the kit restarts the server itself."""
    needs("keep")
    servers, procs = [], []

    def start(extra):
        s = RedisServer(extra)
        servers.append(s)
        _load_library(s)
        d = Driver(driver_cmd, s.url, fresh_ns("keep"))
        procs.append(d)
        return s, d

    def observer(s):
        o = Driver([cli(), "shell", "--backend", "redis"], s.url, procs[0].argv[-1])
        procs.append(o)
        return o

    start.observer = observer
    yield start
    try:
        assert [d.close() for d in procs] == [0] * len(procs), "a driver exited with an error at end of input"
    finally:
        for s in servers:
            s.stop()


def _kept_lock(d):
    (h, ht), _ = held_and_refused()
    g = check_grant(d.ask(acquire_line("a", h, ht, f"ttl={KEEP_TTL_MS}")))
    proof = f"{g['id']} {quote(g['token'])}"
    assert d.ask(f"keep {proof} ttl={KEEP_TTL_MS}") == {"keeping": True}
    assert d.ask(f"kept {g['id']}") == {"keeping": True, "lost": False}
    return g, proof


def _restart(server, extra):
    start = time.monotonic()
    server.restart(extra)
    down_ms = (time.monotonic() - start) * 1000
    assert down_ms < KEEP_TTL_MS / 2, f"the restart took {down_ms:.0f} ms: too long for a {KEEP_TTL_MS} ms lease"
    return start


def test_a_kept_lock_outlives_a_restart_that_keeps_the_data(keep_fault):
    server, d = keep_fault(DURABLE)
    g, proof = _kept_lock(d)
    restarted = _restart(server, DURABLE)
    observer = keep_fault.observer(server)
    # Two leases' time after the restart, the lock is still there, seen by
    # the C++ engine at every look: only the keeper's renewals keep it.
    while time.monotonic() - restarted < 2 * KEEP_TTL_MS / 1000:
        assert [l["id"] for l in observer.ask("locks")["locks"]] == [g["id"]]
        time.sleep(0.05)
    assert observer.ask(f"held {proof}") == {"held": True}
    assert d.ask(f"kept {g['id']}") == {"keeping": True, "lost": False}
    assert d.ask(f"held {proof}") == {"held": True}
    assert d.ask(f"release {proof}") == {"released": True}
    assert d.ask(f"kept {g['id']}") == {"keeping": False, "lost": False}  # a release ends the keeping
    assert observer.ask("locks") == {"locks": []}


def test_a_kept_lock_lost_in_a_restart_without_its_data_is_reported_lost(keep_fault):
    server, d = keep_fault(())
    g, proof = _kept_lock(d)
    restarted = _restart(server, ())  # no persistence: no lock, no library
    lost = lambda: d.ask(f"kept {g['id']}")["lost"]
    wait_until("the keeper reports the lease lost", lost, patience=(KEEP_TTL_MS + LOST_MARGIN_MS) / 1000 + 10)
    took_ms = (time.monotonic() - restarted) * 1000
    assert took_ms < KEEP_TTL_MS + LOST_MARGIN_MS, f"reported lost {took_ms:.0f} ms after the restart"
    assert d.ask(f"kept {g['id']}") == {"keeping": False, "lost": True}
    assert d.ask(f"held {proof}") == {"held": False}  # the client loaded the library again
    assert keep_fault.observer(server).ask("locks") == {"locks": []}
    assert d.ask(f"unkeep {g['id']}") == {"unkept": True}
    assert d.ask(f"kept {g['id']}") == {"keeping": False, "lost": False}
