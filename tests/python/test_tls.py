"""rediss:// from Python: the TLS options of RedisEngine reach the C++ client
(a redis-server with a TLS port that asks for client certificates, and
certificates made by tools/dev/redis_devtools/make_test_certs.sh, as for the C++ suite)."""
import os
import subprocess

import pytest

import pathlock
from conftest import RedisServer, fresh_ns



@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    # The C++ suite's certificates script (tools/dev/redis_devtools/make_test_certs.sh).
    script = os.path.join(os.environ["PATHLOCK_SOURCE_DIR"], "tools", "dev", "redis_devtools", "make_test_certs.sh")
    subprocess.run(["sh", script, str(d)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = {name: str(d / name) for name in
             ("ca.crt", "other-ca.crt", "server.crt", "server.key", "client.crt", "client.key")}
    server = RedisServer(tls_dir=str(d))
    yield server, files
    server.stop()


def test_mutual_tls(tls):
    server, f = tls
    engine = pathlock.RedisEngine(f"rediss://localhost:{server.tls_port}", tls_ca_file=f["ca.crt"],
                                  tls_cert_file=f["client.crt"], tls_key_file=f["client.key"],
                                  tls_server_name="localhost", tls_min_version="1.2", pool_size=2,
                                  connect_timeout=5, command_timeout=5)
    ns = fresh_ns()
    g = engine.acquire(ns, "alice", "delete_folder", {"target": "/p"})
    assert g and not engine.acquire(ns, "bob", "upload", {"target": "/p/x"})
    # The plain port serves the same data: one server, two transports.
    plain = pathlock.RedisEngine(server.url)
    assert [l.id for l in plain.list(ns)] == [g.grant.id]
    assert engine.release(ns, g.grant.id, g.grant.token)


def test_tls_failures(tls):
    server, f = tls
    url = f"rediss://localhost:{server.tls_port}"
    with pytest.raises(pathlock.BackendError):  # a server signed by another CA than the one trusted
        pathlock.RedisEngine(url, tls_ca_file=f["other-ca.crt"], tls_cert_file=f["client.crt"],
                             tls_key_file=f["client.key"], connect_timeout=5)
    with pytest.raises(pathlock.BackendError):  # no client certificate
        pathlock.RedisEngine(url, tls_ca_file=f["ca.crt"], connect_timeout=5)
    with pytest.raises(pathlock.InvalidRequest):  # a certificate without its key
        pathlock.RedisEngine(url, tls_ca_file=f["ca.crt"], tls_cert_file=f["client.crt"])
    with pytest.raises(pathlock.InvalidRequest):
        pathlock.RedisEngine(url, tls_ca_file=f["ca.crt"], tls_min_version="1.1")
    # Test setups only: no verification of the server (still a client certificate).
    insecure = pathlock.RedisEngine(url, tls_insecure_skip_verify=True, tls_cert_file=f["client.crt"],
                                    tls_key_file=f["client.key"], connect_timeout=5)
    assert insecure.list(fresh_ns()) == []
