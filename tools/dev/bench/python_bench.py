#!/usr/bin/env python3
"""Python pairs/s against C++ pairs/s, same machine, same run (docs/python.md#cost-of-the-binding).

Run by hand, not in CI (no assertions; numbers for docs/benchmarks.md#python):

    cmake --build build --target pathlock_python pathlock-memory-bench pathlock-pair-loop
    PYTHONPATH=build/python python3 tools/dev/bench/python_bench.py --build build [--seconds 3] [--pairs 20000]

Embedded backend: one Python thread, acquire(rename_folder on a fresh path
at depth 5) + release, nothing else held, against pathlock-memory-bench
--held 0 (the same workload in C++, one thread). Redis: one redis-server
started here, one client, acquire(upload on a ring of 1000 paths at depth 5)
+ release, against pathlock-pair-loop --held 0 (the same workload in C++,
timed from outside, so its connect is counted: a slight advantage to Python).
"""
import argparse
import os
import re
import subprocess
import sys
import time

import pathlock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "clients", "kit"))
from kitlib import RedisServer  # noqa: E402  (a free port, another when it was taken meanwhile)


def depth5(i):
    return f"/p/d{i % 16:02d}/e{(i // 16) % 16:02d}/f{(i // 256) % 16:02d}/h{i}"


def python_memory(seconds):
    e = pathlock.MemoryEngine()
    n, i = 0, 0
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while True:
        for _ in range(1000):
            r = e.acquire("bench", "o", "rename_folder", {"target": depth5(i)})
            e.release("bench", r.grant.id, r.grant.token)
            i += 1
        n += 1000
        now = time.perf_counter()
        if now >= end:
            return n / (now - start)


def python_redis(url, pairs):
    e = pathlock.RedisEngine(url)
    ring = [depth5(i) for i in range(1000)]
    start = time.perf_counter()
    for i in range(pairs):
        r = e.acquire("bench-py", "o", "upload", {"target": ring[i % 1000]})
        e.release("bench-py", r.grant.id, r.grant.token)
    return pairs / (time.perf_counter() - start)


def cpp_memory(build, seconds):
    out = subprocess.run([os.path.join(build, "bin", "pathlock-memory-bench"), "--held", "0", "--seconds",
                          str(seconds)], check=True, capture_output=True, text=True).stdout
    m = re.search(r"([0-9][0-9,.]*)\s*pairs/s", out)
    if not m:
        sys.exit("cannot read pairs/s from pathlock-memory-bench:\n" + out)
    return float(m.group(1).replace(",", "")), out


def cpp_redis(build, url, pairs):
    start = time.perf_counter()
    subprocess.run([os.path.join(build, "bin", "pathlock-pair-loop"), "--redis", url, "--held", "0", "--pairs",
                    str(pairs), "--namespace", "bench-cpp"], check=True)
    return pairs / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--pairs", type=int, default=20000)
    a = ap.parse_args()
    print(f"pathlock {pathlock.__version__}, Python {sys.version.split()[0]}")
    cpp_mem, _ = cpp_memory(a.build, a.seconds)
    py_mem = python_memory(a.seconds)
    print(f"embedded: C++ {cpp_mem:,.0f} pairs/s, Python {py_mem:,.0f} pairs/s, Python/C++ {py_mem / cpp_mem:.2f}")
    server = RedisServer()
    url = server.url
    try:
        cpp_r = cpp_redis(a.build, url, a.pairs)
        py_r = python_redis(url, a.pairs)
        print(f"redis:    C++ {cpp_r:,.0f} pairs/s, Python {py_r:,.0f} pairs/s, Python/C++ {py_r / cpp_r:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
