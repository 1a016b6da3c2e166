"""A Python process and a C++ process (`pathlock shell`, driven over
stdin/stdout) sharing one namespace on a real redis-server: each refuses the
other where the matrix says, each lists the other's locks, and a release on
one side wakes a waiter on the other."""
import json
import os
import subprocess
import threading

import pytest

import pathlock
from conftest import fresh_ns, load_vector

PATIENCE_MS = 30000


class Shell:
    """`pathlock shell --backend redis`: one command line in, one JSON line out."""

    def __init__(self, url, ns):
        self.proc = subprocess.Popen(
            [os.environ["PATHLOCK_CLI"], "shell", "--backend", "redis", "--redis", url, "--namespace", ns],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def answer(self):
        line = self.proc.stdout.readline()
        assert line, "the shell ended"
        return json.loads(line)

    def ask(self, line):
        self.send(line)
        return self.answer()

    def close(self):
        self.proc.stdin.close()
        assert self.proc.wait(PATIENCE_MS / 1000) == 0


@pytest.fixture
def pair(redis_server):
    ns = fresh_ns()
    shell = Shell(redis_server.url, ns)
    yield pathlock.RedisEngine(redis_server.url), shell, ns
    shell.close()


def _shell_acquire(owner, case_op, targets, extra=""):
    paths = " ".join(json.dumps(p) for p in targets.values())  # role order; quoted words
    return f"acquire {owner} {case_op} {paths} {extra}".rstrip()


def _cases(granted, limit=6):
    """A few matrix-derived cases with this verdict, each with another held operation."""
    out, seen = [], set()
    for c in load_vector("matrix-cases.json")["cases"]:
        key = c["held_op"]
        if c["granted"] == granted and key not in seen:
            seen.add(key)
            out.append(c)
        if len(out) == limit:
            break
    assert out
    return out


@pytest.mark.parametrize("case", _cases(False) + _cases(True), ids=lambda c: "{held_op}-{requested_op}-{relation}-{granted}".format(**c))
def test_each_side_judges_the_others_locks(pair, case):
    py, sh, ns = pair
    # C++ holds, Python requests.
    held = sh.ask(_shell_acquire("cpp", case["held_op"], case["held_targets"]))
    assert held["granted"], held
    r = py.acquire(ns, "python", case["requested_op"], case["requested_targets"])
    assert r.granted == case["granted"]
    if not r.granted:
        assert (r.conflict.id, r.conflict.owner, r.conflict.path) == (held["id"], "cpp", case["held_path"])
    else:
        assert py.release(ns, r.grant.id, r.grant.token)
    assert sh.ask(f"release {held['id']} {held['token']}") == {"released": True}
    # Python holds, C++ requests.
    g = py.acquire(ns, "python", case["held_op"], case["held_targets"]).grant
    answer = sh.ask(_shell_acquire("cpp", case["requested_op"], case["requested_targets"]))
    assert answer["granted"] == case["granted"], answer
    if not answer["granted"]:
        assert (answer["conflict"]["id"], answer["conflict"]["owner"]) == (g.id, "python")
    else:
        assert sh.ask(f"release {answer['id']} {answer['token']}") == {"released": True}
    assert py.release(ns, g.id, g.token)


def test_each_side_lists_the_others_locks(pair):
    py, sh, ns = pair
    cpp = sh.ask('acquire cpp move_folder /p/A /p/B')
    mine = py.acquire(ns, "python", "upload", {"target": "/q/1"}).grant
    listed = py.list(ns)
    assert [(l.id, l.owner, l.targets) for l in listed] == [
        (cpp["id"], "cpp", [("src", "/p/A"), ("dst", "/p/B")]), (mine.id, "python", [("target", "/q/1")])]
    locks = sh.ask("locks")["locks"]
    assert [(l["id"], l["owner"], l["targets"]) for l in locks] == [
        (cpp["id"], "cpp", {"src": "/p/A", "dst": "/p/B"}), (mine.id, "python", {"target": "/q/1"})]
    assert sh.ask(f"held {mine.id} {mine.token}") == {"held": True}
    assert py.is_held(ns, cpp["id"], cpp["token"])


def test_python_release_wakes_a_cpp_waiter(pair):
    py, sh, ns = pair
    g = py.acquire(ns, "python", "delete_folder", {"target": "/w"}).grant
    sh.send(f"acquire cpp upload /w/x wait={PATIENCE_MS}")
    event = threading.Event()
    while not py.waiters(ns):  # the C++ process is in line
        event.wait(0.01)
    assert py.waiters(ns)[0].owner == "cpp"
    assert py.release(ns, g.id, g.token)
    answer = sh.answer()
    assert answer["granted"], answer


def test_cpp_release_wakes_a_python_waiter(pair):
    py, sh, ns = pair
    held = sh.ask("acquire cpp delete_folder /w")
    results = []
    waiter = threading.Thread(target=lambda: results.append(
        py.acquire(ns, "python", "upload", {"target": "/w/x"}, wait=PATIENCE_MS / 1000)))
    waiter.start()
    event = threading.Event()
    while not py.waiters(ns):
        event.wait(0.01)
    assert sh.ask(f"release {held['id']} {held['token']}") == {"released": True}
    waiter.join()
    assert results[0].granted
