#!/usr/bin/env python3
"""The Python client's line of tools/dev/clients_bench.py.

--callers threads share one pathlock.RedisEngine (its pool as large as the
callers; each call releases the GIL while it waits for Redis); caller c runs
--pairs acquire + release pairs of `upload` on /bench/c<c>/<i % 1000>/f.
Prints one JSON line: pairs/s (all pairs over the wall time), p50 and p99 of
one pair in microseconds.

    PYTHONPATH=build/python python_pairs.py --redis URL [--pairs N] [--callers N] [--namespace NS]
"""
import argparse
import json
import threading
import time

import pathlock


def caller(engine, ns, c, pairs, out):
    for i in range(pairs):
        t = time.perf_counter()
        r = engine.acquire(ns, "bench", "upload", {"target": f"/bench/c{c}/{i % 1000}/f"})
        if not r.granted or not engine.release(ns, r.grant.id, r.grant.token):
            raise RuntimeError("a pair was refused or not released")
        out.append(time.perf_counter() - t)


def run_all(engine, ns, callers, pairs):
    outs = [[] for _ in range(callers)]
    threads = [threading.Thread(target=caller, args=(engine, ns, c, pairs, outs[c])) for c in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times = [x for out in outs for x in out]
    if len(times) != callers * pairs:
        raise SystemExit("python_pairs: a caller failed")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redis", required=True)
    ap.add_argument("--pairs", type=int, default=5000)
    ap.add_argument("--callers", type=int, default=1)
    ap.add_argument("--namespace", default="bench-python")
    a = ap.parse_args()
    engine = pathlock.RedisEngine(a.redis, pool_size=a.callers)
    run_all(engine, a.namespace + "-warm", a.callers, min(a.pairs, 1000))
    start = time.perf_counter()
    times = sorted(run_all(engine, a.namespace, a.callers, a.pairs))
    wall = time.perf_counter() - start
    print(json.dumps({"client": "python", "callers": a.callers, "pairs": len(times),
                      "pairs_per_s": len(times) / wall, "p50_us": times[len(times) // 2] * 1e6,
                      "p99_us": times[len(times) * 99 // 100] * 1e6}))


if __name__ == "__main__":
    main()
