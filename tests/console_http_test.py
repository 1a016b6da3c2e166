#!/usr/bin/python3
"""The console as a stranger and a careless operator meet it (docs/console.md#security).

1. Secrets: a redis-server with a password; `pathlock console --redis
   redis://:SECRET@...`. Every answer of the API, the pages and /metrics is
   searched for the password: absent, and /api/info shows the URL as
   `redis://:***@...`. The CLI's stderr on an authentication failure and
   on a malformed URL holds no password either; the password is also read
   from --redis-password-file and PATHLOCK_REDIS_PASSWORD.
2. DNS rebinding: Debian's headless chromium with
   --host-resolver-rules="MAP rebind.attacker.test 127.0.0.1" opens
   http://rebind.attacker.test:PORT/ (the console's port, as a rebinding
   page's origin would be) and runs the attacker's script there: reading
   /api/info and /api/locks and a force-release with --admin are refused
   (421), and the lock is still held. The same script from the console's
   own origin is answered (the control that shows the test can fail).

usage: console_http_test.py --pathlock BIN
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from browser import run, chromium, start, start_console, wait_until, free_port  # noqa: E402

SECRET = "Sup3r-Secret-Pw"
NS = "web"


def fetch(url, method="GET", headers=None):
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def cli(pathlock, *args, env=None, stdin=""):
    return subprocess.run([pathlock, *args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


def check_secrets(pathlock, port, lock_id, wrong):
    secret_url = f"redis://:{SECRET}@127.0.0.1:{port}"
    console = start_console(pathlock, "--backend", "redis", "--redis", secret_url)
    info = json.loads(fetch(console + "api/info")[1])
    assert info["backend"] == f"redis redis://:***@127.0.0.1:{port}", info
    pages = ["", "app.js", "app.css", "editor.js", "metrics", "api/info", "api/namespaces",
             f"api/locks?ns={NS}", f"api/waiters?ns={NS}", f"api/why?ns={NS}&op=upload&path=/team/a",
             "api/grid", "api/matrix/loaded", "api/locks?ns=nope", "no/such/page"]
    for page in pages:
        status, body = fetch(console + page)
        assert SECRET not in body, (page, status)
    assert lock_id in fetch(console + f"api/locks?ns={NS}")[1]
    # The CLI: a wrong password, a malformed URL; neither password shown.
    for args in (["admin", "status", "--redis", f"redis://:{wrong}@127.0.0.1:{port}"],
                 ["admin", "locks", "--redis", f"redis://someone:{wrong}@127.0.0.1:{port}", "--namespace", NS],
                 ["admin", "status", "--redis", f"redis://someone:{wrong}@127.0.0.1:x"],
                 ["console", "--backend", "redis", "--redis", f"redis://:{wrong}@127.0.0.1:{port}"]):
        r = cli(pathlock, *args)
        assert r.returncode == 1, (args, r.returncode, r.stderr)
        assert r.stderr.startswith("error: "), r.stderr
        assert wrong not in r.stderr and wrong not in r.stdout, r.stderr
    assert "someone:***@" in cli(pathlock, "admin", "status", "--redis",
                                 f"redis://someone:{wrong}@127.0.0.1:x").stderr
    # The password apart from the URL: a file, the environment.
    plain = f"redis://127.0.0.1:{port}"
    with tempfile.NamedTemporaryFile("w", suffix=".pw") as f:
        f.write(SECRET + "\n")
        f.flush()
        r = cli(pathlock, "admin", "locks", "--redis", plain, "--namespace", NS, "--redis-password-file", f.name)
        assert r.returncode == 0 and lock_id in r.stdout, r.stderr
        both = cli(pathlock, "admin", "status", "--redis", secret_url, "--redis-password-file", f.name)
        assert both.returncode == 1 and "give one" in both.stderr and SECRET not in both.stderr, both.stderr
    r = cli(pathlock, "admin", "locks", "--redis", plain, "--namespace", NS, env={"PATHLOCK_REDIS_PASSWORD": SECRET})
    assert r.returncode == 0 and lock_id in r.stdout, r.stderr
    r = cli(pathlock, "admin", "status", "--redis", plain, env={"PATHLOCK_REDIS_PASSWORD": wrong})
    assert r.returncode == 1 and wrong not in r.stderr, r.stderr


ATTACK = """
const done = arguments[arguments.length - 1];
(async () => {
  const out = {};
  for (const [name, path, init] of [
      ["info", "/api/info", {}],
      ["locks", "/api/locks?ns=web", {}],
      ["release", "/api/force-release?ns=web&id=" + arguments[0],
       {method: "POST", headers: {"X-Pathlock-Console": "1"}}]]) {
    try {
      const r = await fetch(path, init);
      out[name] = [r.status, await r.text()];
    } catch (e) { out[name] = [0, String(e)]; }
  }
  return out;
})().then(done);
"""


def check_rebinding(pathlock, url, lock_id):
    console = start_console(pathlock, "--backend", "redis", "--redis", url, "--admin")
    port = console.rstrip("/").rsplit(":", 1)[1]
    driver = chromium(extra_args=["--host-resolver-rules=MAP rebind.attacker.test 127.0.0.1"])
    try:
        driver.set_script_timeout(30)
        driver.get(f"http://rebind.attacker.test:{port}/")
        assert "Host 'rebind.attacker.test:" in driver.page_source, driver.page_source
        got = driver.execute_async_script(ATTACK, "0" * 24)  # a well-formed id nobody holds
        for name in ("info", "locks", "release"):
            assert got[name][0] == 421, (name, got[name])
            assert lock_id not in got[name][1] and "matrix" not in got[name][1], got[name]
        got = driver.execute_async_script(ATTACK, lock_id)
        assert got["release"][0] == 421, got["release"]
        held = cli(pathlock, "admin", "locks", "--redis", url, "--namespace", NS)
        assert lock_id in held.stdout, held.stdout
        # Control: the console's own origin reads it (the page's own calls).
        driver.get(console)
        got = driver.execute_async_script(ATTACK, "0" * 24)
        assert got["info"][0] == 200 and got["locks"][0] == 200 and lock_id in got["locks"][1], got
        assert got["release"][0] == 200 and '"released":false' in got["release"][1], got["release"]
    finally:
        driver.quit()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pathlock", required=True)
    a = ap.parse_args()
    port = free_port()
    start(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
           "--requirepass", SECRET], stdout=subprocess.DEVNULL)
    url = f"redis://:{SECRET}@127.0.0.1:{port}"
    wait_until("redis-server", lambda: subprocess.run(["redis-cli", "-p", str(port), "-a", SECRET, "--no-auth-warning",
                                                      "ping"], capture_output=True, text=True).stdout.strip() == "PONG")
    r = cli(a.pathlock, "shell", "--backend", "redis", "--redis", f"redis://127.0.0.1:{port}", "--namespace", NS,
            env={"PATHLOCK_REDIS_PASSWORD": SECRET}, stdin="acquire alice upload /team/a ttl=600000\n")
    lock = json.loads(r.stdout.splitlines()[0])
    assert lock["granted"], r
    check_secrets(a.pathlock, port, lock["id"], "Wr0ng-Pw-" + str(os.getpid()))
    check_rebinding(a.pathlock, url, lock["id"])
    print("console_http: ok")


if __name__ == "__main__":
    run(main)
