"""rediss:// from Python: the TLS options of RedisEngine reach the C++ client
(a redis-server with a TLS port that asks for client certificates, and
certificates made by the openssl command for this test)."""
import subprocess

import pytest

import pathlock
from conftest import RedisServer, fresh_ns

SCRIPT = r"""set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -days 2 -subj "/CN=pathlock py CA" -out ca.crt
key other-ca.key
openssl req -x509 -new -key other-ca.key -days 2 -subj "/CN=pathlock py other CA" -out other-ca.crt
sign() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" \
    -out "$1.crt" 2>/dev/null
}
sign server "/CN=localhost" "DNS:localhost,IP:127.0.0.1"
sign client "/CN=pathlock client" "DNS:pathlock-client"
"""


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["sh", "-c", SCRIPT, "sh", str(d)], check=True, stdout=subprocess.DEVNULL)
    files = {name: str(d / name) for name in
             ("ca.crt", "other-ca.crt", "server.crt", "server.key", "client.crt", "client.key")}
    server = RedisServer(tls_files={"cert": files["server.crt"], "key": files["server.key"], "ca": files["ca.crt"]})
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
