"""Fixtures of the Python tests (run by CTest `python_tests`; tests/python/README.md).

Environment, set by tests/CMakeLists.txt:
  PYTHONPATH              the built package (build/python)
  PATHLOCK_VECTORS_DIR    the shared test vectors (paths.json, matrix-cases.json as the build writes them)
  PATHLOCK_CLI            the `pathlock` program (interop test)
  PATHLOCK_REDIS_SERVER   optional: the redis-server the launcher starts (default: from PATH)

Servers come from the one test launcher, tests/support/pathlock-testenv, through the
kit's wrapper (clients/kit/kitlib.py: RedisServer).
"""
import json
import os
import sys
import uuid

import pytest

import pathlock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from kitlib import RedisServer, free_port  # noqa: E402,F401  (the one launcher and free-port helper of the Python tests)


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
