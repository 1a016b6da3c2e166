#!/usr/bin/env node
// pairs/s and p50 of acquire + release with the Node client against one
// server: node bench/bench.js --redis URL [--seconds S] [--library FILE]
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
const seconds = Number(opt('--seconds', '5'));
const libraryFile = opt('--library', process.env.PATHLOCK_LIBRARY);

(async () => {
  const redis = new Redis(url, { autoResendUnfulfilledCommands: false });
  const pl = new PathLock({ redis, namespace: `bench-node-${process.pid}`, libraryFile });
  for (let i = 0; i < 200; i++) {
    const g = await pl.acquire({ owner: 'bench', op: 'upload', paths: [`/bench/w/${i}`] });
    await pl.release(g.id, g.token);
  }
  const times = [];
  const end = process.hrtime.bigint() + BigInt(Math.round(seconds * 1e9));
  const start = process.hrtime.bigint();
  let n = 0;
  for (let now = start; now < end; now = process.hrtime.bigint()) {
    const g = await pl.acquire({ owner: 'bench', op: 'upload', paths: [`/bench/p/${n % 1000}/f`] });
    await pl.release(g.id, g.token);
    times.push(Number(process.hrtime.bigint() - now) / 1e3);
    n++;
  }
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor(times.length / 2)];
  console.log(JSON.stringify({ client: 'node', pairs: n, pairs_per_s: Math.round(n / elapsed), p50_us: Math.round(p50) }));
  await pl.close();
  redis.disconnect();
})().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
