#!/usr/bin/env python3
"""Each client against the C++ engine: acquire + release pairs/s, p50 and p99, one run.

Starts one redis-server on a free loopback port and measures on it, one
subject after another, first with one caller and then with --callers
concurrent callers per client (default 16), every client running the same
workload: caller c runs --pairs pairs (acquire `upload` on
/bench/c<c>/<i % 1000>/f, release it), one after the other, after a
warm-up; pairs/s is all pairs over the wall time, p50 and p99 are of one
pair. The subjects, each its own program:

  c++ engine   pathlock-pairs (threads sharing one engine), the base of the ratios
  c++ shell    `pathlock shell --backend redis`, timed here over its line
               protocol (pipes and JSON included; one caller only: it is a
               conformance driver, not a client)
  python       python_pairs.py (the binding; threads sharing one engine)
  go           clients/go/cmd/pathlock-go-bench (goroutines sharing one client)
  node         clients/node/bench/bench.js (async loops sharing one client)
  php          clients/php/bench/bench.php (processes: PHP has no threads)

--rounds repeats the whole run (each round a row per subject), since one
pair is two round trips and the machine's weather moves p50 between
minutes. A client whose toolchain is missing (or Node's dist/, built by
`npm run build`) is reported as skipped; --require-all makes that an error
(CTest clients_bench_smoke runs a few pairs of each so the programs do not rot).
Nothing is asserted (docs/benchmarks.md, "Clients of other languages").

    tools/dev/clients_bench/clients_bench.py [--build build] [--pairs 5000] [--callers 16] [--rounds 2] [--require-all]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "clients", "kit"))
from kitlib import RedisServer  # noqa: E402  (a free port, another when it was taken meanwhile)


WARM_PAIRS = 1000  # each program's warm-up per caller: connections, caches, and V8's and PHP's compiled paths


def run(cmd, **kw):
    """stdout of cmd; raises with its stderr on failure."""
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-400:]}")
    return r.stdout


def json_line(cmd, **kw):
    r = json.loads(run(cmd, **kw).strip().splitlines()[-1])
    return r["pairs_per_s"], r["p50_us"], r["p99_us"]


def cpp_engine(a, url, tmp, callers, ns):
    return json_line([os.path.join(a.build, "bin", "pathlock-pairs"), "--redis", url, "--pairs", str(a.pairs),
                      "--callers", str(callers), "--namespace", ns])


def cpp_shell(a, url, tmp, callers, ns):
    if callers > 1:
        return None
    proc = subprocess.Popen([os.path.join(a.build, "bin", "pathlock"), "shell", "--backend", "redis", "--redis", url,
                             "--namespace", ns], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(line):
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    def pair(i):
        g = ask(f"acquire bench upload /bench/c0/{i % 1000}/f")
        if not g.get("granted"):
            raise RuntimeError(f"c++ shell: {g}")
        ask(f"release {g['id']} {g['token']}")

    try:
        for i in range(WARM_PAIRS):
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
    return a.pairs / total, times[len(times) // 2] * 1e6, times[len(times) * 99 // 100] * 1e6


def python(a, url, tmp, callers, ns):
    env = dict(os.environ, PYTHONPATH=os.path.join(a.build, "python"))
    return json_line([sys.executable, os.path.join(HERE, "python_pairs.py"), "--redis", url, "--pairs", str(a.pairs),
                      "--callers", str(callers), "--namespace", ns], env=env)


def go(a, url, tmp, callers, ns):
    exe = os.path.join(tmp, "pathlock-go-bench")
    if not os.path.exists(exe):
        d = os.path.join(ROOT, "clients", "go")
        env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=vendor", GOCACHE=os.path.join(a.build, "go-cache"),
                   GOPATH=os.path.join(a.build, "go-path"))
        run(["sh", "tools/debian-vendor.sh"], cwd=d, env=env)
        run(["go", "build", "-o", exe, "./cmd/pathlock-go-bench"], cwd=d, env=env)
    return json_line([exe, "--redis", url, "--library", a.library, "--pairs", str(a.pairs), "--callers", str(callers),
                      "--namespace", ns])


def node(a, url, tmp, callers, ns):
    d = os.path.join(ROOT, "clients", "node")
    if not os.path.isdir(os.path.join(d, "node_modules")):
        raise RuntimeError("no clients/node/node_modules (npm ci)")
    if not os.path.exists(os.path.join(d, "dist", "cjs", "index.js")):
        raise RuntimeError("no clients/node/dist (npm run build)")
    return json_line(["node", "bench/bench.js", "--redis", url, "--pairs", str(a.pairs), "--callers", str(callers),
                      "--library", a.library, "--namespace", ns], cwd=d)


PHP_LINE = re.compile(r"php client \(in process, \d+ callers\)\s+([0-9.]+) pairs/s\s+p50\s+([0-9.]+) us\s+p99\s+([0-9.]+) us")


def php(a, url, tmp, callers, ns):
    out = run(["php", os.path.join(ROOT, "clients", "php", "bench", "bench.php"), "--redis", url, "--library",
               a.library, "--pairs", str(a.pairs), "--callers", str(callers), "--namespace", ns, "--no-drivers"])
    m = PHP_LINE.search(out)
    if not m:
        raise RuntimeError("cannot read bench.php's in-process line:\n" + out)
    return float(m.group(1)), float(m.group(2)), float(m.group(3))


SUBJECTS = [
    ("c++ engine", cpp_engine),
    ("c++ shell", cpp_shell),
    ("python", python),
    ("go", go),
    ("node", node),
    ("php", php),
]


def fmt(v, spec, unit=""):
    return "-" if v is None else format(v, spec) + unit


def table(rows):
    """rows: (round, callers, name, pairs/s, p50, p99, note); ratios to the same round's and callers' C++ row."""
    base = {(r[0], r[1]): r for r in rows if r[2] == "c++ engine" and not r[6]}
    print("| round | callers | client | pairs/s | p50 µs | p99 µs | pairs/s / C++ | p50 / C++ |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    for rnd, callers, name, rate, p50, p99, note in rows:
        if note:
            print(f"| {rnd} | {callers} | {name} | - | - | - | - | - |  skipped: {note}")
            continue
        b = base.get((rnd, callers))
        r_rate = rate / b[3] if b else None
        r_p50 = p50 / b[4] if b else None
        print(f"| {rnd} | {callers} | {name} | {rate:,.0f} | {p50:,.0f} | {p99:,.0f} | {fmt(r_rate, '.2f', 'x')} | "
              f"{fmt(r_p50, '.2f', 'x')} |")


def measure_round(a, url, tmp, rnd, rows):
    for callers in (1, a.callers):
        for name, measure in SUBJECTS:
            ns = f"bench-{rnd}-{callers}-{name.replace(' ', '-').replace('+', 'p')}"
            try:
                r = measure(a, url, tmp, callers, ns)
                if r is None:
                    continue
                rows.append((rnd, callers, name) + tuple(r) + (None,))
            except (RuntimeError, OSError, ValueError, KeyError) as e:
                rows.append((rnd, callers, name, None, None, None, str(e).splitlines()[0][:160]))
            print(f"round {rnd}: measured {name} with {callers} callers", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the CMake build folder")
    ap.add_argument("--pairs", type=int, default=5000, help="pairs per caller")
    ap.add_argument("--callers", type=int, default=16, help="concurrent callers per client in the second half")
    ap.add_argument("--rounds", type=int, default=2, help="times the whole run is repeated")
    ap.add_argument("--library", help="pathlock_library.lua (default: the build's cloud-drive library)")
    ap.add_argument("--require-all", action="store_true", help="exit 1 when a subject was skipped (the CTest smoke run)")
    a = ap.parse_args()
    if a.pairs < 1 or a.callers < 2 or a.rounds < 1:
        ap.error("--pairs and --rounds must be at least 1, --callers at least 2")
    a.build = os.path.abspath(a.build)
    a.library = os.path.abspath(a.library or os.path.join(
        a.build, "pathlock_matrix", "pathlock_cloud_drive", "redis", "pathlock_library.lua"))
    tmp = tempfile.mkdtemp(prefix="pathlock-clients-bench-")
    server = RedisServer()
    url = server.url
    rows = []
    try:
        for rnd in range(1, a.rounds + 1):
            measure_round(a, url, tmp, rnd, rows)
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"one redis-server ({url}), {a.pairs} pairs per caller, 1 and {a.callers} callers per client")
    table(rows)
    if a.require_all and any(r[6] for r in rows):
        sys.exit("a subject was skipped")


if __name__ == "__main__":
    main()
