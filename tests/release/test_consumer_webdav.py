"""The WebDAV server as an operator installs it (docs/webdav.md "Install"):
in a fresh folder outside the checkout, with an empty module cache and no
network, `go install pathlock.dev/pathlock/webdav/cmd/pathlock-webdav@v<VERSION>`
from the release's module proxy folder (tools/release/go.sh) with nothing but
the documented GOPROXY and GOSUMDB. The program then serves a folder against a
real redis-server with no library loaded (the released module carries the
WebDAV matrix's): PUT, LOCK, a conflicting PUT refused with 423, UNLOCK, and
the PUT accepted.

The release folder and the user's environment come from
test_consumer_go.py's fixtures and helpers; the redis-server from conftest.py.
"""
import http.client
import pathlib
import re
import shutil
import subprocess

from test_consumer_go import VERSION, dist, fresh_folder, go_binary, run, user_env  # noqa: F401 (dist: a fixture)

PROGRAM = "pathlock.dev/pathlock/webdav/cmd/pathlock-webdav"

LOCKINFO = (b'<?xml version="1.0" encoding="utf-8"?>\n<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
            b'</D:lockscope><D:locktype><D:write/></D:locktype><D:owner>release test</D:owner></D:lockinfo>')


def request(addr, method, path, body=None, headers=None):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def start_server(binary, root, redis_url):
    """pathlock-webdav on a free port (--listen 127.0.0.1:0); its address
    from the line it prints once it listens."""
    proc = subprocess.Popen([str(binary), "--root", str(root), "--listen", "127.0.0.1:0", "--redis", redis_url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"serving .* on http://([0-9.]+:[0-9]+) \(locks: pathlock\)", line)
    if not m:
        proc.kill()
        raise AssertionError(f"pathlock-webdav did not start: {line!r} {proc.stderr.read()}")
    return proc, m.group(1)


def test_go_install_the_program_and_lock_a_file(dist, redis_url):  # noqa: F811
    folder = fresh_folder("webdav")
    home, served = folder / "home", folder / "served"
    home.mkdir()
    served.mkdir()
    env = user_env(home, GOPROXY=f"file://{dist}/goproxy", GOSUMDB="off")
    proc = None
    try:
        run(["go", "install", f"{PROGRAM}@v{VERSION}"], folder, env, timeout=240)
        binary = home / "go" / "bin" / "pathlock-webdav"
        assert binary.is_file(), "go install wrote no pathlock-webdav"
        modules = home / "go" / "pkg" / "mod"
        for module in (f"pathlock.dev/pathlock/webdav@v{VERSION}", f"pathlock.dev/pathlock@v{VERSION}",
                       "golang.org/x/net@v0.7.0"):
            assert (modules / module).is_dir(), f"{module} was not downloaded from the release's proxy folder"
        proc, addr = start_server(binary, served, redis_url)
        check_lock_conflict(addr, served)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=20)
        subprocess.run([go_binary(), "clean", "-modcache"], cwd=folder, env=env, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(folder)


def check_lock_conflict(addr, served: pathlib.Path):
    assert request(addr, "PUT", "/notes.txt", b"first")[0] == 201
    status, headers, body = request(addr, "LOCK", "/notes.txt", LOCKINFO,
                                    {"Content-Type": "application/xml", "Timeout": "Second-60", "Depth": "0"})
    assert status == 200, body
    token = headers["Lock-Token"].strip("<>")
    assert b"release test" in body, body
    # Without the token: refused while the lock is held, the file unchanged.
    assert request(addr, "PUT", "/notes.txt", b"intruder")[0] == 423
    assert (served / "notes.txt").read_bytes() == b"first"
    assert request(addr, "UNLOCK", "/notes.txt", headers={"Lock-Token": f"<{token}>"})[0] == 204
    assert request(addr, "PUT", "/notes.txt", b"second")[0] in (201, 204)  # x/net/webdav answers 201
    assert (served / "notes.txt").read_bytes() == b"second"
