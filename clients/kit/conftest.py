"""Fixtures of the conformance kit (docs/clients.md).

  python3 -m pytest clients/kit --driver "CMD ARGS"     (or PATHLOCK_KIT_DRIVER="CMD ARGS")

Environment:
  PATHLOCK_CLI          the `pathlock` program: loads the library (`pathlock redis load`) and is the
                        C++ engine of the interop tests and the observer (default /work/ref/bin/pathlock)
  PATHLOCK_VECTORS_DIR  paths.json and matrix-cases.json (default /work/ref/vectors)
  PATHLOCK_LIBRARY      optional: a library file to FUNCTION LOAD instead of `pathlock redis load`
  PATHLOCK_MATRIX_FILE  the shipped matrix's JSON file, for drivers with the "matrix" feature
                        (default: matrix/cloud-drive.json of this source tree)
  PATHLOCK_REDIS_SERVER optional: the redis-server to start (default: from PATH)
  PATHLOCK_TESTENV      optional: the test launcher that starts it (default: tests/support/pathlock-testenv
                        of this source tree)
"""
import json
import os
import re
import subprocess

import pytest

from kitlib import Driver, RedisServer, Resp, driver_argv, fresh_ns

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES = ("cancel", "blockers", "waiters", "matrix", "deadline", "keep", "protocol", "convert")


def pytest_addoption(parser):
    parser.addoption("--driver", default=os.environ.get("PATHLOCK_KIT_DRIVER", ""),
                     help="the driver's command line (it gets --redis URL --namespace NS appended)")


def cli():
    return os.environ.get("PATHLOCK_CLI", "/work/ref/bin/pathlock")


def vectors_dir():
    return os.environ.get("PATHLOCK_VECTORS_DIR", "/work/ref/vectors")


def matrix_file():
    return os.environ.get("PATHLOCK_MATRIX_FILE",
                          os.path.join(HERE, "..", "..", "matrix", "cloud-drive.json"))


def load_vector(name):
    with open(os.path.join(vectors_dir(), name), encoding="utf-8") as f:
        return json.load(f)


def _load_library(server):
    """The library of the shipped matrix, as a deployment would load it."""
    lib = os.environ.get("PATHLOCK_LIBRARY")
    if lib:
        with open(lib, "rb") as f:
            r = Resp(server.port)("FUNCTION", "LOAD", f.read())
        assert not isinstance(r, str) or "already exists" in r or r.startswith("pathlock_"), r
        return
    done = subprocess.run([cli(), "redis", "load", "--redis", server.url], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"pathlock redis load failed: {done.stderr}"


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    _load_library(server)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def driver_cmd(request):
    text = request.config.getoption("--driver")
    if not text:
        pytest.fail("no driver: pass --driver \"CMD ARGS\" or set PATHLOCK_KIT_DRIVER")
    return driver_argv(text)


@pytest.fixture(scope="session")
def hello(driver_cmd, redis_server):
    """The driver's `hello`; a driver without it fails every test."""
    d = Driver(driver_cmd, redis_server.url, fresh_ns())
    try:
        h = d.ask("hello")
    finally:
        d.close()
    if not isinstance(h.get("features"), list) or not isinstance(h.get("client"), str):
        pytest.fail(f"the driver does not answer hello with client, version and features: {h}")
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", str(h.get("version"))), h
    unknown = [f for f in h["features"] if f not in FEATURES]
    assert not unknown, f"unknown features {unknown} (known: {FEATURES})"
    return h


@pytest.fixture
def needs(hello):
    def check(feature):
        if feature not in hello["features"]:
            pytest.skip(f"the driver's hello does not list {feature!r} ({hello['client']} {hello['version']})")
    return check


class _Processes:
    def __init__(self, server):
        self.server = server
        self.all = []

    def start(self, argv, ns, extra=()):
        d = Driver(argv, self.server.url, ns, extra)
        self.all.append(d)
        return d

    def close(self):
        bad = [(d.argv, d.close()) for d in self.all]
        assert all(status == 0 for _, status in bad), f"a driver exited with an error at end of input: {bad}"


@pytest.fixture
def procs(redis_server, hello):
    p = _Processes(redis_server)
    yield p
    p.close()


@pytest.fixture
def ns():
    return fresh_ns()


@pytest.fixture
def driver(procs, driver_cmd, ns):
    """start(ns=...) opens one more driver process on the namespace (default: the test's)."""
    return lambda namespace=None, extra=(): procs.start(driver_cmd, namespace or ns, extra)


@pytest.fixture
def cpp(procs, ns):
    """The C++ engine (`pathlock shell --backend redis`) on the same server and namespace."""
    return lambda namespace=None: procs.start([cli(), "shell", "--backend", "redis"], namespace or ns)
