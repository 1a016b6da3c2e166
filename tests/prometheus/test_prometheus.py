"""The shipped alert rules and the exporter's output, checked with Debian's
promtool (CTest prometheus): the rules load and fire as their tests say
(alerts_test.yml), and a live `pathlock shell --metrics-listen` scrape is
valid exposition that shows a request waiting right now."""
import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, "..", "..", "docs", "prometheus", "alerts.yml")


def promtool(*args, stdin=None):
    exe = shutil.which("promtool")
    if not exe:
        pytest.fail("promtool not found (Debian package prometheus; tools/build.sh installs it)")
    return subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, cwd=HERE)


def test_rules_load_and_fire_as_tested():
    checked = promtool("check", "rules", RULES)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "alerts_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_rule_has_a_severity():
    text = open(RULES, encoding="utf-8").read()
    assert text.count("- alert:") == text.count("severity:") >= 4


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def test_a_live_scrape_is_valid_and_shows_a_request_waiting_now():
    cli = os.environ["PATHLOCK_CLI"]
    shell = subprocess.Popen([cli, "shell", "--metrics-listen", "127.0.0.1:0"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        while url is None:
            line = shell.stderr.readline()
            assert line, "the shell ended before it said where its metrics are"
            m = re.search(r"metrics at (\S+)", line)
            url = m and m.group(1)
        fresh = scrape(url)
        linted = promtool("check", "metrics", stdin=fresh)
        assert linted.returncode == 0, linted.stdout + linted.stderr
        assert 'pathlock_leases_lost_total 0' in fresh
        assert 'pathlock_wait_seconds_count{op="move_folder"} 0' in fresh
        shell.stdin.write("acquire alice upload /p/A/f\nacquire bob move_folder /p/A /p/B wait=60000\n")
        shell.stdin.flush()
        assert '"granted":true' in shell.stdout.readline()
        deadline = time.monotonic() + 30
        while 'pathlock_waiting_requests{op="move_folder"} 1' not in (now := scrape(url)):
            assert time.monotonic() < deadline, "the waiting move never showed as waiting"
            time.sleep(0.02)
        assert re.search(r'pathlock_refusals_total\{op="move_folder",held_op="upload",relation="held_descendant"\} 1',
                         now)
        shell.stdin.write("cancel\n")
        shell.stdin.flush()
        assert '"cancelled":true' in shell.stdout.readline()
        assert 'pathlock_waiting_requests{op="move_folder"} 0' in scrape(url)
    finally:
        shell.stdin.close()
        shell.wait(30)
