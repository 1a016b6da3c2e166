"""Shared by the consumer tests: a redis-server of a test's own on a free
loopback port, stopped at the end (the fixture redis_url): the kit's
RedisServer (clients/kit/kitlib.py), which tries another port when the one it
drew was taken meanwhile."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "kit"))
from kitlib import RedisServer  # noqa: E402


@pytest.fixture
def redis_url():
    server = RedisServer()
    try:
        yield server.url
    finally:
        server.stop()
