"""tests/support/watchdog.py: a hung test is shown (every thread's stack) and
killed with everything it started; a finished one keeps its exit status."""
import os
import pathlib
import subprocess
import sys
import time

WATCHDOG = pathlib.Path(__file__).resolve().parents[1] / "support" / "watchdog.py"


def run(seconds, *command):
    return subprocess.run([sys.executable, str(WATCHDOG), "--seconds", str(seconds), "--name", "probe", "--", *command],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purpose
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_hang_prints_every_process_and_thread_then_is_killed(tmp_path):
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $! > {pids}; python3 -c 'import threading,time; threading.Thread(target=time.sleep, args=(300,)).start(); time.sleep(300)'"
    started = time.monotonic()
    result = run(2, "sh", "-c", script)
    assert result.returncode == 124
    assert "'probe' ran out of its 2 s" in result.stderr
    assert result.stderr.count("===== stacks of process") >= 3  # sh, sleep, python3
    assert "Thread 2" in result.stderr  # the python process's second thread is shown
    assert "'probe' killed after 2 s" in result.stderr
    background = int(pids.read_text())
    deadline = time.monotonic() + 10
    while alive(background) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(background), "the test's background process outlived it"
    assert time.monotonic() - started < 100


def test_an_exit_status_passes_through():
    assert run(30, "sh", "-c", "exit 3").returncode == 3
    assert run(30, "true").returncode == 0


def test_what_a_finished_test_left_behind_is_killed(tmp_path):
    pids = tmp_path / "pids"
    assert run(30, "sh", "-c", f"sleep 300 & echo $! > {pids}").returncode == 0
    leftover = int(pids.read_text())
    deadline = time.monotonic() + 10
    while alive(leftover) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(leftover)


def test_bad_usage_is_refused():
    result = subprocess.run([sys.executable, str(WATCHDOG), "--seconds", "0", "--", "true"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    assert result.returncode == 2 and "give --seconds" in result.stderr
