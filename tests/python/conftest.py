"""Fixtures of the Python tests (run by CTest `python_tests`; tests/python/README.md).

Environment, set by tests/CMakeLists.txt:
  PYTHONPATH              the built package (build/python)
  PATHLOCK_VECTORS_DIR    the shared test vectors (paths.json, matrix-cases.json as the build writes them)
  PATHLOCK_CLI            the `pathlock` program (interop test)
  PATHLOCK_REDIS_SERVER   optional: the redis-server to start (default: from PATH)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

import pytest

import pathlock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from kitlib import free_port, serves  # noqa: E402  (the one free-port helper of the Python tests)


def _vectors_dir():
    d = os.environ.get("PATHLOCK_VECTORS_DIR")
    if not d:
        pytest.fail("PATHLOCK_VECTORS_DIR is not set (run through ctest)")
    return d


def load_vector(name):
    with open(os.path.join(_vectors_dir(), name), encoding="utf-8") as f:
        return json.load(f)


def fresh_ns():
    return "py-" + uuid.uuid4().hex[:12]


class RedisServer:
    """A real redis-server on a free loopback port, in a temporary directory;
    on another port when it does not start (a port taken meanwhile)."""

    def __init__(self, tls_files=None):
        """tls_files: {"cert", "key", "ca"}: also a TLS port (self.tls_port) that
        asks clients for a certificate; the plain port stays (readiness)."""
        exe = os.environ.get("PATHLOCK_REDIS_SERVER") or shutil.which("redis-server")
        if not exe:
            pytest.fail("no redis-server (install redis-server or set PATHLOCK_REDIS_SERVER)")
        self.dir = tempfile.TemporaryDirectory(prefix="pathlock-py-redis-")
        for _ in range(5):
            self.port = free_port()
            args = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", self.dir.name]
            if tls_files:
                self.tls_port = free_port()
                args += ["--tls-port", str(self.tls_port), "--tls-cert-file", tls_files["cert"],
                         "--tls-key-file", tls_files["key"], "--tls-ca-cert-file", tls_files["ca"],
                         "--tls-auth-clients", "yes"]
            self.proc = subprocess.Popen(
                args,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._ready():
                return
            self.proc.kill()
            self.proc.wait()
        pytest.fail("redis-server did not start")

    @property
    def url(self):
        return f"redis://127.0.0.1:{self.port}"

    def _ready(self):
        for _ in range(200):
            if self.proc.poll() is not None:
                return False
            if serves(self.port, self.proc):
                return True
            self.proc_wait(0.05)
        return False

    def proc_wait(self, seconds):
        try:
            self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            pass

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.dir.cleanup()


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(params=["memory", "redis"])
def engine(request):
    """The same tests on both backends."""
    if request.param == "memory":
        return pathlock.MemoryEngine()
    return pathlock.RedisEngine(request.getfixturevalue("redis_server").url)


@pytest.fixture
def ns():
    return fresh_ns()
