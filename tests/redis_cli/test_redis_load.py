"""`pathlock redis load` and `pathlock redis libraries` (docs/cli.md) against a
real redis-server and a real 3-master Redis Cluster, as the documented
administrator ACL user (docs/operations.md#trust-model): idempotent, on every
master, and the library's `info` function answers what it serves.

Environment (tests/CMakeLists.txt): PATHLOCK_CLI, PATHLOCK_VECTORS_DIR, PATHLOCK_SHIPPED_LIBRARY (the
file the build writes with pathlock-matrixc and the package installs)."""
import importlib.machinery
import json
import os
import subprocess
import sys
import types

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from kitlib import CLUSTER_PORT_MAX, TESTENV, RedisServer, Resp, TestEnv, free_port  # noqa: E402

# The administrator of docs/operations.md#trust-model, with what the loader
# needs on top: INFO (is this a cluster?) and CLUSTER SLOTS (its masters).
ADMIN_ACL = ("on >adminpw resetkeys ~pl:* resetchannels &pl:* -@all +fcall +function +@read +@write -@dangerous "
             "+time +spublish +ssubscribe +sunsubscribe +ping +client|setname +config|get +info +cluster|slots").split()


def cli(*args, ok=True):
    done = subprocess.run([os.environ["PATHLOCK_CLI"], *args], capture_output=True, text=True, timeout=120)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def lines(done):
    return [json.loads(line) for line in done.stdout.splitlines()]


def fingerprint():
    with open(os.path.join(os.environ["PATHLOCK_VECTORS_DIR"], "matrix-cases.json"), encoding="utf-8") as f:
        return json.load(f)["fingerprint"]


def add_admin(port):
    assert Resp(port)("ACL", "SETUSER", "loader", *ADMIN_ACL) == "OK"


@pytest.fixture(scope="module")
def standalone():
    s = RedisServer()
    add_admin(s.port)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def cluster():
    """Three masters from the launcher (`pathlock-testenv cluster`: ports <= CLUSTER_PORT_MAX, the bus port
    being port + 10000; up once every node says cluster_state:ok)."""
    c = TestEnv("cluster", "--masters", "3")
    for port in c.info["ports"]:
        add_admin(port)
    yield c
    c.stop()


def url_of(port):
    return f"redis://loader:adminpw@127.0.0.1:{port}"


def check_info(info, library):
    assert info["library"] == library and info["fingerprint"] == fingerprint() and info["layout"] == 4
    assert info["matrix"] and info["matrix_version"] and info["pathlock_version"]


def test_load_is_idempotent_and_info_answers(standalone):
    first = lines(cli("redis", "load", "--redis", url_of(standalone.port)))
    assert [(r["node"], r["status"]) for r in first] == [(f"127.0.0.1:{standalone.port}", "loaded")]
    library = first[0]["library"]
    assert first[0]["fingerprint"] == fingerprint() and library.startswith("pathlock_v4_")
    with open(os.environ["PATHLOCK_SHIPPED_LIBRARY"], encoding="utf-8") as f:
        assert f.readline() == f"#!lua name={library}\n"  # the loader loads the very text of the shipped file
    again = lines(cli("redis", "load", "--redis", url_of(standalone.port)))
    assert [(r["library"], r["status"]) for r in again] == [(library, "already loaded")]
    (listed,) = lines(cli("redis", "libraries", "--redis", url_of(standalone.port)))
    check_info(listed["info"], library)
    # The function as any client calls it: FCALL_RO <prefix>info 0, element types included.
    r = Resp(standalone.port)("FCALL_RO", listed["info"]["function_prefix"] + "info", "0")
    assert [type(x) for x in r] == [bytes, bytes, bytes, bytes, bytes, int, bytes], r
    assert r[0] == b"info" and r[1].decode() == library and r[4].decode() == fingerprint() and r[5] == 4
    assert Resp(standalone.port)("FCALL_RO", listed["info"]["function_prefix"] + "info", "1", "k") == [
        b"invalid", b"info takes no keys and no arguments"]


def test_libraries_without_info_are_listed(standalone):
    Resp(standalone.port)("FUNCTION", "LOAD",
                          "#!lua name=pathlock_v3_0000000000000001\n"
                          "redis.register_function('pl_v3_0000000000000001_held', function() return 1 end)")
    listed = {r["library"]: r["info"] for r in lines(cli("redis", "libraries", "--redis", url_of(standalone.port)))}
    assert listed["pathlock_v3_0000000000000001"] is None


def test_load_on_every_master_of_a_cluster(cluster):
    seed = url_of(cluster.info["ports"][1])
    first = lines(cli("redis", "load", "--redis", seed))
    assert sorted(r["node"] for r in first) == sorted(f"127.0.0.1:{p}" for p in cluster.info["ports"])
    assert {r["status"] for r in first} == {"loaded"}
    again = lines(cli("redis", "load", "--redis", seed))
    assert {r["status"] for r in again} == {"already loaded"} and len(again) == 3
    listed = lines(cli("redis", "libraries", "--redis", seed))
    assert sorted(r["node"] for r in listed) == sorted(r["node"] for r in first)
    for r in listed:
        check_info(r["info"], first[0]["library"])


def test_a_user_without_function_load_is_refused(standalone):
    Resp(standalone.port)("ACL", "SETUSER", "svc", "on", ">svcpw", "~pl:*", "&pl:*", "+@all", "-function")
    done = cli("redis", "load", "--redis", f"redis://svc:svcpw@127.0.0.1:{standalone.port}", ok=False)
    assert done.returncode == 1 and "NOPERM" in done.stderr, done


def test_a_missing_matrix_file_fails(standalone):
    done = cli("redis", "load", "--redis", url_of(standalone.port), "--matrix", "/nonexistent/m.json", ok=False)
    assert done.returncode == 1 and done.stdout == ""


def test_bad_usage_exits_2():
    assert cli("redis", ok=False).returncode == 2
    assert cli("redis", "load", ok=False).returncode == 2
    assert cli("redis", "libraries", "--redis", "redis://127.0.0.1:1", "--matrix", "x", ok=False).returncode == 2


def test_load_through_sentinel_reaches_the_master():
    env = TestEnv("sentinel", "--replicas", "0", "--sentinels", "1", "--master-name", "kitmaster")
    try:
        master = env.info["master_port"]
        url = env.url  # redis-sentinel://127.0.0.1:S#kitmaster; up once the sentinel names the master
        (done,) = lines(cli("redis", "load", "--redis", url))
        assert (done["node"], done["status"]) == (f"127.0.0.1:{master}", "loaded")
        (listed,) = lines(cli("redis", "libraries", "--redis", url))
        check_info(listed["info"], done["library"])
    finally:
        env.stop()


def test_free_cluster_ports_leave_room_for_the_bus_port():
    """2000 draws of the kit's helper (Python binds without SO_REUSEADDR, so the
    OS draws from its whole ephemeral range: above CLUSTER_PORT_MAX too)."""
    for _ in range(2000):
        port = free_port(cluster=True)
        assert 1 <= port <= CLUSTER_PORT_MAX and port + 10000 <= 65535, port
    assert CLUSTER_PORT_MAX == 55535


def test_the_launchers_cluster_ports_leave_room_for_the_bus_port():
    """2000 draws of the launcher's own rule (tests/support/pathlock-testenv: free_port(bus=True))."""
    loader = importlib.machinery.SourceFileLoader("pathlock_testenv", TESTENV)
    env = types.ModuleType(loader.name)
    loader.exec_module(env)
    assert env.CLUSTER_PORT_MAX == CLUSTER_PORT_MAX
    for _ in range(2000):
        port = env.free_port(bus=True)
        assert 1 <= port <= CLUSTER_PORT_MAX and port + 10000 <= 65535, port
