"""Shared by the consumer tests: a redis-server of a test's own on a free
loopback port, stopped at the end (the fixture redis_url)."""
import shutil
import socket
import subprocess
import tempfile

import pytest


@pytest.fixture
def redis_url():
    exe = shutil.which("redis-server")
    assert exe, "no redis-server"
    with tempfile.TemporaryDirectory(prefix="pathlock-consumer-redis-") as d:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--dir", d], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_ready(proc, port)
            yield f"redis://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait()


def wait_ready(proc, port):
    for _ in range(200):
        assert proc.poll() is None, "redis-server exited"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            pass
        try:
            proc.wait(0.05)
        except subprocess.TimeoutExpired:
            pass
    pytest.fail("redis-server did not answer PING")
