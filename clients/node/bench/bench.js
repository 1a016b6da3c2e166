#!/usr/bin/env node
// The Node client's line of tools/dev/clients_bench.py: --callers concurrent
// loops share one PathLock (one ioredis connection); caller c runs --pairs
// acquire + release pairs, one after the other, of `upload` on
// /bench/c<c>/<i % 1000>/f. Prints, as JSON, pairs/s (all pairs over the
// wall time) and the p50 and p99 of one pair.
//   node bench/bench.js --redis URL [--pairs N] [--callers N] [--library FILE] [--namespace NS]
// (library: --library or PATHLOCK_LIBRARY, else the one loaded on the server).
'use strict';
const path = require('node:path');
const Redis = require('ioredis');
const { PathLock } = require(path.join(__dirname, '..', 'dist', 'cjs', 'index.js'));

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const url = opt('--redis', 'redis://127.0.0.1:6379');
const pairs = Number(opt('--pairs', '5000'));
const callers = Number(opt('--callers', '1'));
const namespace = opt('--namespace', `bench-node-${process.pid}`);
const libraryFile = opt('--library', process.env.PATHLOCK_LIBRARY);

async function caller(pl, c, n, times) {
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    const g = await pl.acquire({ owner: 'bench', op: 'upload', paths: [`/bench/c${c}/${i % 1000}/f`] });
    await pl.release(g.id, g.token);
    times.push(Number(process.hrtime.bigint() - t) / 1e3);
  }
}

async function runAll(pl, n) {
  const times = [];
  await Promise.all(Array.from({ length: callers }, (_, c) => caller(pl, c, n, times)));
  return times;
}

(async () => {
  if (!(pairs >= 1 && callers >= 1)) throw new Error('--pairs and --callers must be at least 1');
  const redis = new Redis(url, { autoResendUnfulfilledCommands: false });
  const warm = new PathLock({ redis, namespace: `${namespace}-warm`, libraryFile });
  await runAll(warm, Math.min(pairs, 5000)); // V8 tiers the call path up over the first thousands of pairs
  await warm.close();
  const pl = new PathLock({ redis, namespace, libraryFile });
  const start = process.hrtime.bigint();
  const times = await runAll(pl, pairs);
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  times.sort((a, b) => a - b);
  const at = (q) => Math.round(times[Math.floor(times.length * q)]);
  console.log(JSON.stringify({ client: 'node', callers, pairs: times.length,
    pairs_per_s: Math.round(times.length / elapsed), p50_us: at(0.5), p99_us: at(0.99) }));
  await pl.close();
  redis.disconnect();
})().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
