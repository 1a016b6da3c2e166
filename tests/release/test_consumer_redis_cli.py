"""The Functions library alone, as docs/install.md tells any language's user:
a redis-server where only `redis-cli -x FUNCTION LOAD < dist/redis/cloud-drive.lua`
loaded it, its `info` answering what dist/redis/cloud-drive.json says, then
one client, the packaged `pathlock shell` (the .deb unpacked into a fresh
folder), takes, is refused and releases a lock through it as a service user
that may not load functions (docs/operations.md#trust-model), so it can only
have used the library redis-cli loaded. The same user against a server
without the library is refused. CTest release_consumer_redis_cli (fixture
release_dist)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from consumer_common import dist, fresh_folder, the_deb, unpack_deb, user_env  # noqa: E402
from kitlib import RedisServer  # noqa: E402


def redis_cli(port, *args, stdin=None):
    done = subprocess.run(["redis-cli", "-p", str(port), *args], stdin=stdin, capture_output=True, text=True,
                          env=user_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def service_user(port, prefix):
    """docs/operations.md's ordinary service user: every lock function but
    force_release and leave, no FUNCTION command."""
    calls = [f"+fcall|{prefix}{name}" for name in
             ("acquire", "release", "renew", "list", "list_ro", "probe", "held", "blockers", "waiters")]
    acl = ["on", ">svcpw", "resetkeys", "~pl:*", "resetchannels", "&pl:*", "-@all", *calls, "+fcall_ro",
           "+@read", "+@write", "-@dangerous", "-function", "+time", "+spublish", "+ssubscribe", "+sunsubscribe",
           "+ping", "+client|setname", "+config|get", "+info"]
    assert redis_cli(port, "ACL", "SETUSER", "svc", *acl) == "OK"


@pytest.fixture(scope="module")
def meta():
    with open(os.path.join(dist(), "redis", "cloud-drive.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def cli():
    folder = fresh_folder("redis-cli")
    prefix = unpack_deb(the_deb(dist()), folder)
    yield os.path.join(prefix, "bin", "pathlock")
    shutil.rmtree(folder, ignore_errors=True)


class Shell:
    """`pathlock shell` on Redis, one command per line, one JSON answer per line."""

    def __init__(self, cli, url):
        self.proc = subprocess.Popen([cli, "shell", "--backend", "redis", "--redis", url, "--namespace", "consumer"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=user_env())

    def __call__(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, f"the shell ended: {self.proc.stderr.read()}"
        return json.loads(answer)

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0, self.proc.stderr.read()


def test_only_redis_cli_loaded_the_library(meta, cli):
    server = RedisServer()
    try:
        with open(os.path.join(dist(), "redis", meta["file"]), encoding="utf-8") as lua:
            assert redis_cli(server.port, "-x", "FUNCTION", "LOAD", stdin=lua) == meta["library"]
        info = redis_cli(server.port, "FCALL_RO", meta["function_prefix"] + "info", "0").splitlines()
        assert info == ["info", meta["library"], meta["matrix"], meta["matrix_version"], meta["fingerprint"],
                        str(meta["layout"]), meta["pathlock_version"]]  # redis-cli prints the integer as text
        service_user(server.port, meta["function_prefix"])
        shell = Shell(cli, f"redis://svc:svcpw@127.0.0.1:{server.port}")
        move = shell("acquire alice move_folder /p/A /p/B ttl=30000")
        assert move["granted"] is True, move
        upload = shell("acquire bob upload /p/A/C/report.pdf ttl=30000")
        assert upload["granted"] is False and upload["conflict"]["owner"] == "alice", upload
        assert shell(f"release {move['id']} {move['token']}") == {"released": True}
        upload = shell("acquire bob upload /p/A/C/report.pdf ttl=30000")
        assert upload["granted"] is True, upload
        assert shell(f"release {upload['id']} {upload['token']}") == {"released": True}
        shell.close()
        listed = json.loads(redis_cli(server.port, "--json", "FUNCTION", "LIST", "LIBRARYNAME", "pathlock_*"))
        assert [lib["library_name"] for lib in listed] == [meta["library"]]
    finally:
        server.stop()


def test_without_the_library_the_service_user_is_refused(meta, cli):
    server = RedisServer()
    try:
        service_user(server.port, meta["function_prefix"])
        done = subprocess.run([cli, "shell", "--backend", "redis", "--redis",
                               f"redis://svc:svcpw@127.0.0.1:{server.port}", "--namespace", "consumer"],
                              input="acquire alice upload /p/x ttl=30000\n", capture_output=True, text=True,
                              env=user_env(), timeout=60)
        assert '"granted":true' not in done.stdout.replace(" ", "")
        assert "library" in (done.stdout + done.stderr), done.stdout + done.stderr
        assert redis_cli(server.port, "FUNCTION", "LIST") == ""
    finally:
        server.stop()
