"""Bad input: InvalidRequest (a ValueError), never a crash, never a half-taken lock."""
import math

import pytest

import pathlock
from conftest import free_port


@pytest.mark.parametrize("kwargs", [
    dict(op="no_such_op", targets={"target": "/x"}),
    dict(op="upload", targets={"nope": "/x"}),
    dict(op="move_folder", targets={"src": "/a"}),                     # missing role
    dict(op="move_folder", targets=[("src", "/a"), ("src", "/b"), ("dst", "/c")]),  # repeated role
    dict(op="move_folder", targets={"src": "/a", "dst": "/a/b"}),      # into its own subtree
    dict(op="upload", targets={"target": "relative"}),
    dict(op="upload", targets={"target": "/p/../x"}),
    dict(op="upload", targets="/x"),                                     # a string, not targets
    dict(op="upload", targets=[("target",)]),
    dict(op="upload", targets={"target": "/x"}, ttl=0),
    dict(op="upload", targets={"target": "/x"}, ttl=math.nan),
    dict(op="upload", targets={"target": "/x"}, ttl=math.inf),
    dict(op="upload", targets={"target": "/x"}, ttl=10 * 24 * 3600),
    dict(op="upload", targets={"target": "/x"}, idempotency_key="bad key"),
])
def test_bad_acquire(engine, ns, kwargs):
    with pytest.raises(pathlock.InvalidRequest) as info:
        engine.acquire(ns, "o", **kwargs)
    assert isinstance(info.value, ValueError) and str(info.value)
    assert engine.list(ns) == []


def test_bad_names_and_limits(engine, ns):
    for bad_ns in ("", "has space", "x" * 129):
        with pytest.raises(pathlock.InvalidRequest):
            engine.acquire(bad_ns, "o", "upload", {"target": "/x"})
    with pytest.raises(pathlock.InvalidRequest):
        engine.acquire(ns, "", "upload", {"target": "/x"})
    with pytest.raises(pathlock.InvalidRequest):
        engine.list_page(ns, "/", limit=0)
    with pytest.raises(pathlock.InvalidRequest):
        engine.list_page(ns, "/", limit=10, after="not-a-cursor")
    with pytest.raises(pathlock.InvalidRequest):
        engine.blockers(ns, "upload", {"target": "/x"}, limit=0)
    with pytest.raises(pathlock.InvalidRequest):
        engine.waiters(ns, "/", limit=-1)
    with pytest.raises(pathlock.InvalidRequest):
        engine.renew(ns, "id", "token", ttl=-1)
    for targets in ({"target": 5}, [("target", None)], ["ab"], [5]):
        with pytest.raises(pathlock.InvalidRequest):
            engine.acquire(ns, "o", "upload", targets)
    assert engine.list(ns) == []


def test_bad_redis_options():
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.RedisEngine("http://127.0.0.1:6379")
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.RedisEngine("redis://127.0.0.1:6379", pool_size=0)
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.RedisEngine("redis://127.0.0.1:6379", tls_ca_file="/x.pem")  # TLS option with plain redis://
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.RedisEngine("redis://127.0.0.1:6379", command_timeout=0)


def test_backend_failure_is_connection_error():
    port = free_port()  # a port nobody listens on
    with pytest.raises(pathlock.BackendError) as info:
        pathlock.RedisEngine(f"redis://127.0.0.1:{port}", connect_timeout=0.5)
    assert isinstance(info.value, ConnectionError)


def test_keeper_bad_options(engine):
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.LeaseKeeper(engine, renew_after=1.5)
    with pathlock.LeaseKeeper(engine) as keeper:
        g = engine.acquire("kns", "o", "upload", {"target": "/x"}).grant
        with pytest.raises(pathlock.InvalidRequest):
            keeper.keep("kns", g, ttl=0)
    with pytest.raises(pathlock.InvalidRequest):
        keeper.keep("kns", g, ttl=1)  # closed
