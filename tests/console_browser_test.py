#!/usr/bin/python3
"""The console in a real browser (docs/console.md#tests).

Starts a redis-server, creates locks and waiters through `pathlock shell`
(one lock's owner and path hold HTML/JS), starts `pathlock console` against
it (read-only, then --admin), and drives Debian's headless chromium through
chromium-driver with python3-selenium. Checks that the tree shows exactly
the locks and waiters `pathlock admin locks|waiters` list, that the "why"
form names the blocking lock, that the hostile text shows literally and
nothing runs, that force-release is absent and refused (403) without
--admin, and that with --admin it asks for confirmation and releases.
With --scrape, the heat map shows what a `pathlock shell --metrics-listen`
reports, the sources list names a dead URL as an error, and a hostile
exporter's markup in an operation name is listed as text.
Screenshots go to --out. No timing assertions: waits are for DOM states.

usage: console_browser_test.py --pathlock BIN --out DIR
"""
import argparse
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "support"))
from browser import run, chromium, start, start_console, wait_until, free_port  # noqa: E402

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

HOSTILE_OWNER = "<img src=x onerror=window.__pwned=1>"
HOSTILE_PATH = "/team/<script>window.__pwned=2</script>/x.txt"
NS = "web"


def run_lines(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


class HostileExporter(http.server.BaseHTTPRequestHandler):
    """Serves Prometheus text whose operation names hold markup."""
    TEXT = ("# TYPE pathlock_refusals_total counter\n"
            'pathlock_refusals_total{op="<img src=x onerror=window.__pwned=3>",held_op="upload",relation="same"} 4\n')

    def do_GET(self):
        body = self.TEXT.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def expand_all(driver):
    # Opens every folder (the tree renders a folder's content when opened).
    for _ in range(50):
        closed = driver.execute_script(
            "const c=[...document.querySelectorAll('#tree details:not([open])')]; c.forEach(d=>d.open=true); return c.length;")
        if closed == 0:
            return
        time.sleep(0.05)


def shown_ids(driver, selector, attr):
    return set(driver.execute_script(
        f"return [...document.querySelectorAll('{selector}')].map(e=>e.getAttribute('{attr}'));"))


def setup_locks(a):
    """A redis-server with the namespace's locks, its limit and a waiter; what the engine lists."""
    port = free_port()
    start(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
          stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}"
    wait_until("redis-server", lambda: subprocess.run(["redis-cli", "-p", str(port), "ping"],
                                                     capture_output=True, text=True).stdout.strip() == "PONG")
    shell = [a.pathlock, "shell", "--backend", "redis", "--redis", url, "--namespace", NS]
    # The namespace's own limits: the page shows its use against them.
    subprocess.run([a.pathlock, "admin", "limits", "--redis", url, "--namespace", NS, "--set", "--locks", "5"],
                   capture_output=True, check=True)
    script = "\n".join([
        "acquire alice upload /team/docs/report.pdf ttl=600000",
        'acquire "bob smith" delete_folder /team/old ttl=600000',
        f'acquire "{HOSTILE_OWNER}" upload "{HOSTILE_PATH}" ttl=600000',
        "acquire carol move_folder /proj/a /proj/b ttl=600000",
    ]) + "\n"
    granted = [json.loads(l) for l in subprocess.run(shell, input=script, capture_output=True, text=True,
                                                     check=True).stdout.splitlines()]
    assert all(g["granted"] for g in granted), granted
    alice_id, bob_id, hostile_id, carol_id = (g["id"] for g in granted)
    # A waiter: dave waits to delete /team (blocked by the three locks below it).
    waiter = start(shell, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    waiter.stdin.write("acquire dave delete_folder /team wait=600000\n")
    waiter.stdin.flush()
    admin = [a.pathlock, "admin"]
    wait_until("the waiter", lambda: run_lines(admin + ["waiters", "--redis", url, "--namespace", NS]))
    engine_locks = {l["id"] for l in run_lines(admin + ["locks", "--redis", url, "--namespace", NS])}
    engine_waiters = {w["id"] for w in run_lines(admin + ["waiters", "--redis", url, "--namespace", NS])}
    assert engine_locks == {alice_id, bob_id, hostile_id, carol_id}, engine_locks

    return argparse.Namespace(url=url, admin=admin, locks=engine_locks, waiters=engine_waiters, alice=alice_id,
                              bob=bob_id, hostile=hostile_id, carol=carol_id)


def check_locks_page(driver, a, console, w):
    """The Locks page shows exactly the engine's locks, waiters and limits, literally; read-only."""
    engine_locks, engine_waiters = w.locks, w.waiters
    alice_id, bob_id, hostile_id = w.alice, w.bob, w.hostile
    # Exactly the engine's locks and waiters.
    assert shown_ids(driver, "#tree .lock", "data-lock-id") == engine_locks
    assert shown_ids(driver, "#waiters > li", "data-waiter-id") == engine_waiters
    # The namespace's use against its limit: 4 locks of 5, near it; its badge in the list.
    wait_until("the limits", lambda: driver.find_elements(By.CSS_SELECTOR, "#limits .limit"))
    limit = driver.find_element(By.CSS_SELECTOR, "#limits .limit")
    assert limit.text == "locks 4 of 5" and "near" in limit.get_attribute("class"), limit.text
    assert driver.find_element(By.CSS_SELECTOR, "#ns-list .use").text == "4/5"
    # Each waiter is drawn beside the locks that block it: the three under /team.
    beside = driver.execute_script(
        "return [...document.querySelectorAll('#tree .waiting')].map(w=>w.previousElementSibling.getAttribute('data-lock-id'));")
    assert set(beside) == {alice_id, bob_id, hostile_id}, beside
    # The hostile owner and path show literally; nothing ran; no element was injected.
    body = driver.find_element(By.TAG_NAME, "body").text
    assert HOSTILE_OWNER in body, body
    assert "<script>window.__pwned=2</script>" in body or "<script>window.__pwned=2<" in body
    assert driver.execute_script("return window.__pwned === undefined;")
    assert driver.execute_script("return document.querySelectorAll('img, #tree script, #waiters script').length;") == 0
    # Read-only: no force-release button, and the API refuses.
    assert not driver.find_elements(By.CSS_SELECTOR, "button.force")
    req = urllib.request.Request(console + "api/force-release", data=f"ns={NS}&id={alice_id}".encode(),
                                 headers={"X-Pathlock-Console": "1"}, method="POST")
    try:
        urllib.request.urlopen(req)
        raise AssertionError("force-release was not refused")
    except urllib.error.HTTPError as e:
        assert e.code == 403, e.code
    # Bad input: 400 with the message.
    try:
        urllib.request.urlopen(console + "api/why?ns=web&op=no_such_op&path=/a")
        raise AssertionError("unknown op was not refused")
    except urllib.error.HTTPError as e:
        assert e.code == 400 and "unknown operation" in json.loads(e.read())["error"]
    driver.save_screenshot(os.path.join(a.out, "console-tree.png"))



def check_why(driver, a, w):
    """Why is this blocked: the answer names bob's lock and marks it in the tree."""
    bob_id, engine_waiters = w.bob, w.waiters
    # Why is this blocked: deleting /team/old is refused by bob's lock (and dave's older place in line).
    Select(driver.find_element(By.ID, "why-op")).select_by_value("delete_folder")
    path = driver.find_element(By.CSS_SELECTOR, "#why-paths input")
    path.clear()
    path.send_keys("/team/old")
    driver.find_element(By.CSS_SELECTOR, "#why-form button[type=submit]").click()
    wait_until("the answer", lambda: driver.find_elements(By.CSS_SELECTOR, "#why-answer li[data-blocker-id]"))
    named = shown_ids(driver, "#why-answer li[data-blocker-id]", "data-blocker-id")
    assert bob_id in named, named
    assert named - {bob_id} <= engine_waiters, named
    marked = shown_ids(driver, "#tree .lock.blocker", "data-lock-id")
    assert marked == {bob_id}, marked
    driver.save_screenshot(os.path.join(a.out, "console-why.png"))



def check_metrics(driver, a):
    """The console's own refusal counts."""
    # Metrics: the dry run counted delete_folder refused by delete_folder.
    driver.find_element(By.ID, "tab-metrics").click()
    wait_until("the heat map", lambda: driver.find_elements(By.CSS_SELECTOR, "#heat td[data-refusals]"))
    counted = driver.execute_script(
        "return [...document.querySelectorAll('#heat td[data-refusals]')].map(td=>+td.dataset.refusals).reduce((a,b)=>a+b,0);")
    assert counted >= 1, counted
    assert "pathlock_" in driver.find_element(By.ID, "prom").text
    assert "Counted by this console" in driver.find_element(By.ID, "heat-from").text
    driver.save_screenshot(os.path.join(a.out, "console-metrics.png"))



def check_scrape(driver, a, w):
    """--scrape: the heat map is what the engines report."""
    url = w.url
    # --scrape: the heat map is what the engines report. One shell with an
    # exporter refuses twice; a dead URL is listed as an error beside it.
    exporter = start([a.pathlock, "shell", "--metrics-listen", "127.0.0.1:0"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics_url = exporter.stderr.readline().split("metrics at ")[1].strip()
    for line in ["acquire ann upload /s/A/f", "acquire bob delete_folder /s/A", "acquire cat delete_folder /s"]:
        exporter.stdin.write(line + "\n")
        exporter.stdin.flush()
        exporter.stdout.readline()
    dead = f"http://127.0.0.1:{free_port()}/metrics"
    hostile = http.server.ThreadingHTTPServer(("127.0.0.1", 0), HostileExporter)
    threading.Thread(target=hostile.serve_forever, daemon=True).start()
    hostile_url = f"http://127.0.0.1:{hostile.server_address[1]}/metrics"
    scraping = start_console(a.pathlock, "--backend", "redis", "--redis", url,
                             "--scrape", metrics_url, "--scrape", dead, "--scrape", hostile_url)
    driver.get(scraping + "#ns=" + NS)
    driver.find_element(By.ID, "tab-metrics").click()
    def source_states():
        s = driver.execute_script("return Object.fromEntries([...document.querySelectorAll('#sources li')]"
                                  ".map(li=>[li.dataset.source, li.dataset.state]));")
        return s if len(s) == 3 and "pending" not in s.values() else None
    states = wait_until("the sources pulled", source_states)
    assert states == {metrics_url: "ok", dead: "error", hostile_url: "ok"}, states
    cells = driver.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('#heat td[data-refusals]')]"
        ".filter(td=>+td.dataset.refusals>0).map(td=>[td.title.split(':')[0], +td.dataset.refusals]));")
    assert cells == {"delete_folder requested, upload held": 2}, cells
    assert "reported by 2 of 3 engines" in driver.find_element(By.ID, "heat-from").text
    assert "cannot connect" in driver.find_element(By.CSS_SELECTOR, "#sources li[data-state=error]").text
    # The hostile exporter's operation is not in this matrix: listed apart, as text; nothing ran.
    unknown = driver.execute_script(
        "return [...document.querySelectorAll('#unknown-rows tr')].map(tr=>[...tr.cells].map(td=>td.textContent));")
    assert unknown == [["<img src=x onerror=window.__pwned=3>", "upload", "4"]], unknown
    assert driver.execute_script("return window.__pwned === undefined && document.querySelectorAll('img').length === 0;")
    driver.save_screenshot(os.path.join(a.out, "console-scrape.png"))



def check_admin(driver, a, w):
    """--admin: force-release with a confirmation step."""
    url, admin, carol_id = w.url, w.admin, w.carol
    # --admin: force-release with a confirmation step.
    admin_console = start_console(a.pathlock, "--backend", "redis", "--redis", url, "--admin")
    driver.get(admin_console + "#ns=" + NS)
    wait_until("the tree", lambda: driver.find_elements(By.CSS_SELECTOR, f"#tree .lock[data-lock-id='{carol_id}']"))
    driver.find_element(By.CSS_SELECTOR, f"#tree .lock[data-lock-id='{carol_id}'] button.force").click()
    confirm = wait_until("the confirmation", lambda: driver.find_elements(By.CSS_SELECTOR, "button.confirm-yes"))
    driver.save_screenshot(os.path.join(a.out, "console-confirm.png"))
    assert carol_id in {l["id"] for l in run_lines(admin + ["locks", "--redis", url, "--namespace", NS])}
    confirm[0].click()
    wait_until("the release", lambda: carol_id not in {
        l["id"] for l in run_lines(admin + ["locks", "--redis", url, "--namespace", NS])})
    wait_until("the tree without it", lambda: not driver.find_elements(
        By.CSS_SELECTOR, f"#tree .lock[data-lock-id='{carol_id}']"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pathlock", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    w = setup_locks(a)
    console = start_console(a.pathlock, "--backend", "redis", "--redis", w.url)
    assert console.startswith("http://127.0.0.1:"), console
    driver = chromium()
    try:
        driver.get(console + "#ns=" + NS)
        wait_until("the tree", lambda: driver.find_elements(By.CSS_SELECTOR, "#tree .lock"))
        expand_all(driver)
        check_locks_page(driver, a, console, w)
        check_why(driver, a, w)
        check_metrics(driver, a)
        check_scrape(driver, a, w)
        check_admin(driver, a, w)
    finally:
        driver.quit()
    print("console browser test: ok; screenshots in", a.out)

if __name__ == "__main__":
    run(main)
