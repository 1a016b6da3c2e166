"""The RESP type of every reply element, as docs/lua-protocol.md#reply-types
lists them, read from a real redis-server over RESP2 and RESP3, and the
wake-up message's shape on both (#waiting-and-the-line)."""
import os
import socket
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from kitlib import RedisServer, Resp  # noqa: E402

B, I, A = bytes, int, list
SUFFIXES = "meta idx locks exp ent wq wexp wrec wake".split()


@pytest.fixture(scope="module")
def server():
    s = RedisServer()
    with open(os.environ["PATHLOCK_SHIPPED_LIBRARY"], "rb") as f:
        code = f.read()
    assert Resp(s.port)("FUNCTION", "LOAD", code) == code.split(b"\n")[0].split(b"=")[1]
    s.prefix = "pl_" + code.split(b"\n")[0].split(b"=")[1].decode()[len("pathlock_"):] + "_"
    yield s
    s.stop()


def types(v):
    return [types(x) if isinstance(x, list) else type(x) for x in v]


def test_every_reply_element_has_its_documented_type(server):
    r, keys = Resp(server.port), [f"pl:{{types}}:{s}" for s in SUFFIXES]

    def call(fn, *args, ro=False):
        return r("FCALL_RO" if ro else "FCALL", server.prefix + fn, 9, *keys, *args)

    g = call("acquire", "alice", "upload", "30000", "id1", "tok1", "", "", "", "/p/A")
    assert types(g) == [B, B, B, I, I, I]
    assert types(call("acquire", "bob", "delete_folder", *("30000", "id2", "tok2"), "", "", "", "/p/A", "1", "w1",
                      "2000")) == [B, B, B, B, B, B, I, B, B, B, I]
    assert call("acquire", "a", "upload", "30000", "id3", "t", "nope", "x", "", "/p/A") == [b"not_holder"]
    assert types(call("acquire", "a", "upload", "1e3", "id3", "t", "", "", "", "/p/A")) == [B, B]  # invalid
    assert types(call("held", "id1", "tok1", ro=True)) == [B, I]
    assert types(call("renew", "id1", "tok1", "")) == [B, I]
    assert types(call("list", "/", "10", "")) == [B, B, [B, B, B, I, I, I, [B, B]]]
    assert types(call("list_ro", "/", "10", "", ro=True)) == [B, B, [B, B, B, I, I, I, [B, B]]]
    assert types(call("blockers", "delete_folder", "/p/A", "10", ro=True)) == [
        B, I, [I, B, B, B, B, B, B, B, B, I, I, I, I], [I, B, B, B, B, B, B, B, B, I, I, I, I]]
    assert types(call("waiters", "/", "10", ro=True)) == [B, [B, B, B, I, I, [B, B], B]]  # converts: protocol 4.5
    assert types(call("convert", "", "upload", "30000", "", "", "id1", "tok1", "", "/p/B")) == [B, B, B, I, I, I]
    assert types(call("acquire", "carol", "upload", "30000", "id5", "tok5", "", "", "", "/q/A")) == [B, B, B, I, I, I]
    assert types(call("convert", "", "delete_folder", "30000", "", "", "id1", "tok1", "", "/q")) == [
        B, B, B, B, B, B, I, B, B, B, I]
    assert call("convert", "", "upload", "30000", "", "", "id1", "nope", "", "/p/B") == [b"not_holder"]
    assert types(call("release", "id5", "tok5")) == [B, I]
    assert call("probe", ro=True) == [b"ok"]
    assert types(call("leave", "w1")) == [B, I]
    assert types(call("release", "id1", "tok1")) == [B, I]
    assert call("release", "id1", "tok1") == [b"missing"] and call("force_release", "id1") == [b"missing"]
    assert types(r("FCALL_RO", server.prefix + "info", 0)) == [B, B, B, B, B, I, B]
    assert types(r("FCALL_RO", server.prefix + "contract", 0)) == [B, B]
    late = call("acquire", "a", "upload", "30000", "id4", "t", "", "", "", "/p/L", "1", "", "0", "1")
    assert late[0] == b"late" and types(late) == [B, I]
    r("HSET", "pl:{old}:meta", "layout", "3")
    r("HSET", "pl:{old}:locks", "x", "y")
    old = [f"pl:{{old}}:{s}" for s in SUFFIXES]
    assert r("FCALL", server.prefix + "release", 9, *old, "a", "b") == [b"layout", b"3", b"4"]
    assert r("FCALL", "pl_no_such_function", 0).startswith("ERR Function not found")


def subscriber(port, resp3):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    if resp3:
        s.sendall(b"HELLO 3\r\n")
        assert s.recv(65536).startswith(b"%")
    s.sendall(b"SSUBSCRIBE pl:{wake}:wake\r\n")
    head = b">3" if resp3 else b"*3"
    assert s.recv(65536) == head + b"\r\n$10\r\nssubscribe\r\n$14\r\npl:{wake}:wake\r\n:1\r\n"
    return s


def read_exactly(s, n):
    data = b""
    while len(data) < n:
        data += s.recv(n - len(data))
    return data


def test_a_release_publishes_its_paths_on_resp2_and_resp3(server):
    subs = [subscriber(server.port, False), subscriber(server.port, True)]
    r, keys = Resp(server.port), [f"pl:{{wake}}:{s}" for s in SUFFIXES]
    g = r("FCALL", server.prefix + "acquire", 9, *keys, "a", "move_folder", "30000", "id1", "t", "", "", "", "/q/A",
          "/q/B")
    assert g[0] == b"granted"
    assert r("FCALL", server.prefix + "release", 9, *keys, "id1", "t") == [b"released", 0]
    body = b"\r\n$8\r\nsmessage\r\n$14\r\npl:{wake}:wake\r\n$9\r\n/q/A\n/q/B\r\n"
    assert read_exactly(subs[0], len(body) + 2) == b"*3" + body
    assert read_exactly(subs[1], len(body) + 2) == b">3" + body
