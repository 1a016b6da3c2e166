"""What the console's browser tests share (tests/console_*_test.py): child
processes that are stopped at exit, free loopback ports, waiting for a state
(never for a time), starting `pathlock console`, and Debian's headless
chromium through chromium-driver."""
import socket
import subprocess
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

procs = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, **kw):
    p = subprocess.Popen(args, **kw)
    procs.append(p)
    return p


def stop_all():
    for p in reversed(procs):
        p.kill()
        p.wait()


def wait_until(what, check, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = check()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def start_console(pathlock, *args):
    """Starts `pathlock console ARGS` and returns its URL."""
    p = start([pathlock, "console", *args], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert "console at " in line, line
    return line.split("console at ")[1].split()[0]


def chromium(width=1600, height=1000, downloads=None, extra_args=()):
    opts = webdriver.ChromeOptions()
    for arg in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", *extra_args]:
        opts.add_argument(arg)
    opts.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    if downloads:
        driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    return driver


def run(main):
    """Runs a test's main(), then stops every child process it started."""
    try:
        main()
    finally:
        stop_all()
