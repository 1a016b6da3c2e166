"""Memory pressure on a server that may evict (docs/operations.md "Eviction
and memory limits"): under every maxmemory-policy pathlock accepts, another
application fills the server's memory with keys of its own, with and without
a TTL, while the driver holds a lock and waits in line for another. Nothing
of pathlock's may be evicted: the holder is still `held`, a conflicting
request is refused, the waiter is still in line, and it gets the lock once
the holder releases it. Each policy has a redis-server of its own with a
small `maxmemory`; under the volatile-* policies the test also checks that
Redis did evict (the filler's keys with a TTL), so the pressure was real."""
import pytest

from conftest import _load_library, cli
from kitlib import Driver, RedisServer, Resp, RespError, acquire_line, fresh_ns, quote
from test_locks import check_conflict, check_grant
from test_waiting import held_and_refused, in_line

POLICIES = ["noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"]
HEADROOM = 3 * 1024 * 1024  # maxmemory: what the server uses with the library loaded, plus this
LONG_MS = 60000


def _info(redis, section):
    text = redis("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _pipeline(redis, cmds):
    """Sends every command of `cmds`, then reads their replies."""
    out = b""
    for args in cmds:
        out += b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
    redis.sock.sendall(out)
    return [redis._reply() for _ in cmds]


def _fill(redis, first, keys, ttl, batch=500):
    """Another application's cache: `keys` 200-byte values from cache:`first`
    on, with EX `ttl` (or none), pipelined. Returns how many were refused
    (OOM, expected once no key can be evicted)."""
    value = "v" * 200
    refused = 0
    for start in range(first, first + keys, batch):
        expiry = ("EX", ttl) if ttl else ()
        replies = _pipeline(redis, [("SET", f"cache:{i}", value, *expiry) for i in range(start, start + batch)])
        refused += sum(isinstance(r, RespError) for r in replies)
    return refused


def _unfill(redis, keys, batch=500):
    """The other application deletes its keys (pathlock's are left alone)."""
    for start in range(0, keys, batch):
        _pipeline(redis, [("DEL", f"cache:{i}") for i in range(start, start + batch)])


def _not_granted(answer):
    """A conflicting acquire under pressure: refused, or (at maxmemory, where
    acquire is not run) an OOM error; never granted."""
    if "error" in answer:
        assert "OOM" in answer["error"], answer
    else:
        check_conflict(answer)


@pytest.fixture(params=POLICIES)
def pressured(request):
    s = RedisServer(extra=("--maxmemory-policy", request.param))
    try:
        _load_library(s)
        redis = Resp(s.port)
        used = int(_info(redis, "memory")["used_memory"])
        assert redis("CONFIG", "SET", "maxmemory", str(used + HEADROOM)) == "OK"
        yield request.param, s, redis
        redis.close()
    finally:
        s.stop()


def test_memory_pressure_evicts_no_lock_and_no_place(pressured, driver_cmd):
    policy, server, redis = pressured
    ns = fresh_ns("evict")
    a, b, observer = (Driver(driver_cmd, server.url, ns), Driver(driver_cmd, server.url, ns),
                      Driver([cli(), "shell", "--backend", "redis"], server.url, ns))
    (h, ht), (r, rt) = held_and_refused()
    g = check_grant(a.ask(acquire_line("a", h, ht, f"ttl={LONG_MS}")))
    proof = f"{g['id']} {quote(g['token'])}"
    b.send(acquire_line("b", r, rt, f"wait={LONG_MS}"))
    in_line(observer, "b")

    # 1. Keys with a TTL: the volatile-* policies evict them, noeviction
    # refuses them at maxmemory.
    refused = _fill(redis, 0, 20000, 3600)
    evicted = int(_info(redis, "stats")["evicted_keys"])
    if policy == "noeviction":
        assert evicted == 0 and refused > 0, (evicted, refused)
    else:
        assert evicted > 0 and refused == 0, f"{policy}: {evicted} evicted, {refused} refused: no real pressure"
    for key in redis("KEYS", f"pl:{{{ns}}}:*"):  # nothing of pathlock's has a TTL the policy could act on
        assert policy == "noeviction" or redis("PTTL", key) == -1, (policy, key)
    assert a.ask(f"held {proof}") == {"held": True}, policy
    _not_granted(observer.ask(acquire_line("c", r, rt)))
    # The waiter is still in line, unless a refresh of its place met
    # maxmemory (noeviction only: then it failed with OOM, as documented).
    if policy != "noeviction":
        assert not b.pending(), "the waiter was answered while the lock was held"

    # 2. Keys without a TTL on top, until nothing can be evicted: OOM.
    assert _fill(redis, 20000, 20000, None) > 0
    assert a.ask(f"held {proof}") == {"held": True}, policy
    _not_granted(observer.ask(acquire_line("c", r, rt)))

    # 3. The other application frees its memory; the holder still holds,
    # and its release hands the lock to the waiter.
    _unfill(redis, 40000)
    assert a.ask(f"held {proof}") == {"held": True}, policy
    if b.pending():  # failed at maxmemory, so no longer in line: it asks again
        gone = b.answer()
        assert "OOM" in gone.get("error", ""), gone
        b.send(acquire_line("b", r, rt, f"wait={LONG_MS}"))
    in_line(observer, "b")
    assert a.ask(f"release {proof}") == {"released": True}
    w = check_grant(b.answer())
    assert w["fence"] > g["fence"]
    assert [d.close() for d in (a, b, observer)] == [0, 0, 0]
