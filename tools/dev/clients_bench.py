#!/usr/bin/env python3
"""Clients of other languages against the C++ engine: acquire + release pairs/s and p50, one run.

Starts one redis-server on a free loopback port and measures, one after
another on that server, one pair loop (one acquire + release after the other,
one connection, no lock held) of:

  c++ engine     in process, the base of the ratios: pairs/s from
                 pathlock-pair-loop --held 0 --pairs N (wall time, less that
                 of --pairs 0: start-up and connection), p50 from
                 pathlock-bench --quick --only pathlock-redis (its 0-held,
                 1-client point; its own window is too short for pairs/s)
  c++ shell      `pathlock shell --backend redis`, timed here over its line
                 protocol (pipes and JSON included)
  go             clients/go/cmd/pathlock-go-bench (built here, vendor/)
  node           clients/node/bench/bench.js (needs node_modules and dist/)
  php            clients/php/bench/bench.php (its in-process line)

and prints one table: client, pairs/s, p50, and the ratios to the C++ engine.
A client whose toolchain is missing is reported as skipped. Numbers compare
clients on one machine; nothing is asserted (docs/benchmarks.md, "Clients of
other languages").

    tools/dev/clients_bench.py [--build build] [--pairs 5000]
"""
import argparse
import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(tmp):
    port = free_port()
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind",
                             "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc, f"redis://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start")


def run(cmd, **kw):
    """stdout of cmd; raises with its stderr on failure."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def bench_p50(a, url, tmp):
    out = os.path.join(tmp, "bench-results")
    run([os.path.join(a.build, "bin", "pathlock-bench"), "--quick", "--only", "pathlock-redis", "--redis", url,
         "--out", out])
    with open(os.path.join(out, "results.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if (row["sweep"], row["series"], row["held"], row["clients"]) == ("held", "pathlock-redis", "0", "1"):
                return float(row["p50_us"])
    raise RuntimeError("results.csv has no 0-held, 1-client pathlock-redis row")


def pair_loop_seconds(a, url, pairs):
    start = time.perf_counter()
    run([os.path.join(a.build, "bin", "pathlock-pair-loop"), "--redis", url, "--held", "0", "--pairs", str(pairs),
         "--namespace", "bench-cpp-loop"])
    return time.perf_counter() - start


def cpp_engine(a, url, tmp):
    p50 = bench_p50(a, url, tmp)
    pair_loop_seconds(a, url, 200)  # warm-up
    elapsed = pair_loop_seconds(a, url, a.pairs) - pair_loop_seconds(a, url, 0)
    return a.pairs / elapsed, p50


def cpp_shell(a, url, tmp):
    proc = subprocess.Popen([os.path.join(a.build, "bin", "pathlock"), "shell", "--backend", "redis", "--redis", url,
                             "--namespace", "bench-cpp-shell"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, bufsize=1)

    def ask(line):
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    def pair(i):
        g = ask(f"acquire bench upload /bench/p/{i % 1000}/f")
        if not g.get("granted"):
            raise RuntimeError(f"c++ shell: {g}")
        ask(f"release {g['id']} {g['token']}")

    try:
        for i in range(200):
            pair(i)
        times = []
        start = time.perf_counter()
        for i in range(a.pairs):
            t = time.perf_counter()
            pair(i)
            times.append(time.perf_counter() - t)
        total = time.perf_counter() - start
    finally:
        proc.stdin.close()
        proc.wait()
    times.sort()
    return a.pairs / total, times[len(times) // 2] * 1e6


def go(a, url, tmp):
    d = os.path.join(ROOT, "clients", "go")
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=vendor", GOCACHE=os.path.join(a.build, "go-cache"),
               GOPATH=os.path.join(a.build, "go-path"))
    exe = os.path.join(tmp, "pathlock-go-bench")
    run(["sh", "tools/debian-vendor.sh"], cwd=d, env=env)
    run(["go", "build", "-o", exe, "./cmd/pathlock-go-bench"], cwd=d, env=env)
    r = json.loads(run([exe, "--redis", url, "--library", a.library, "--pairs", str(a.pairs)]))
    return r["pairs_per_s"], r["p50_us"]


def node(a, url, tmp):
    d = os.path.join(ROOT, "clients", "node")
    if not os.path.isdir(os.path.join(d, "node_modules")):
        raise RuntimeError("no clients/node/node_modules (npm ci)")
    run(["npx", "tsc", "-p", "tsconfig.json"], cwd=d)
    r = json.loads(run(["node", "bench/bench.js", "--redis", url, "--seconds", str(a.seconds), "--library",
                        a.library], cwd=d))
    return r["pairs_per_s"], r["p50_us"]


def php(a, url, tmp):
    out = run(["php", os.path.join(ROOT, "clients", "php", "bench", "bench.php"), "--redis", url, "--library",
               a.library, "--pairs", str(a.pairs)])
    m = re.search(r"php client \(in process\)\s+([0-9.]+) pairs/s\s+p50\s+([0-9.]+) us", out)
    if not m:
        raise RuntimeError("cannot read bench.php's in-process line:\n" + out)
    return float(m.group(1)), float(m.group(2))


SUBJECTS = [
    ("c++ engine", "pathlock-pair-loop, pathlock-bench (in process)", cpp_engine),
    ("c++ shell", "pathlock shell (line protocol)", cpp_shell),
    ("go", "pathlock-go-bench (in process)", go),
    ("node", "bench/bench.js (in process)", node),
    ("php", "bench/bench.php (in process)", php),
]


def fmt(v, spec, unit=""):
    return "-" if v is None else format(v, spec) + unit


def table(rows):
    base_rate, base_p50 = rows[0][2], rows[0][3]
    print("| client | how | pairs/s | p50 µs | pairs/s / C++ | p50 / C++ |")
    print("|---|---|---:|---:|---:|---:|")
    for name, how, rate, p50, note in rows:
        if note:
            print(f"| {name} | {how} | - | - | - | - |  skipped: {note}")
            continue
        r_rate = rate / base_rate if base_rate else None
        r_p50 = p50 / base_p50 if p50 is not None and base_p50 else None
        print(f"| {name} | {how} | {rate:,.0f} | {fmt(p50, '.0f')} | {fmt(r_rate, '.2f', 'x')} | {fmt(r_p50, '.2f', 'x')} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the CMake build folder")
    ap.add_argument("--pairs", type=int, default=5000, help="pairs per client (node: see --seconds)")
    ap.add_argument("--seconds", type=float, default=3.0, help="node's measuring window")
    ap.add_argument("--library", help="pathlock_library.lua (default: the build's cloud-drive library)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.library = os.path.abspath(a.library or os.path.join(
        a.build, "pathlock_matrix", "pathlock_cloud_drive", "redis", "pathlock_library.lua"))
    tmp = tempfile.mkdtemp(prefix="pathlock-clients-bench-")
    proc, url = start_redis(tmp)
    rows = []
    try:
        for name, how, measure in SUBJECTS:
            try:
                rate, p50 = measure(a, url, tmp)
                rows.append((name, how, rate, p50, None))
            except (RuntimeError, OSError, ValueError, KeyError) as e:
                rows.append((name, how, None, None, str(e).splitlines()[0][:160]))
            print(f"measured {name}", file=sys.stderr)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if rows[0][4]:
        sys.exit(f"the C++ engine was not measured: {rows[0][4]}")
    print(f"one redis-server ({url}), {a.pairs} pairs per client, sequential, no lock held")
    table(rows)


if __name__ == "__main__":
    main()
