'use strict';
// The deployments of docs/node.md, each real and started here on loopback
// ports: a Cluster of three masters, a master named by a sentinel, and a
// server the client reaches only over TLS. On each, the same scenario:
// acquire and refuse, a waiter woken by a release through the wake-up
// channel, and an aborted waiter that leaves nobody in line.
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Redis = require('ioredis');
const { PathLock, BackendError } = require('../dist/cjs/index.js');
const { CLUSTER_PORT_MAX, startTestenv, startRedis, freshNamespace, until, library } = require('./support/server');

const cleanups = [];
after(async () => {
  for (const f of cleanups.reverse()) await f();
});
async function server(options) {
  const s = await startRedis(options);
  cleanups.push(() => s.stop());
  return s;
}
async function testenv(kind, options) {
  const env = await startTestenv(kind, options);
  cleanups.push(() => env.stop());
  return env;
}
function plain(port) {
  const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  cleanups.push(() => r.disconnect());
  return r;
}
function closing(x) {
  cleanups.push(() => (x.close ? x.close() : x.disconnect()));
  return x;
}
const subscribers = async (conn, ns) => Number((await conn.call('PUBSUB', 'SHARDNUMSUB', `pl:{${ns}}:wake`))[1]);

/**
 * The scenario on a client whose re-checks are off (recheckMs beyond the
 * wait), so a waiter is granted only by a wake-up message. owner: a plain
 * connection to the node serving the namespace; others: the other masters.
 */
async function scenario(pl, owner, others = []) {
  pl.recheckMs = 3600000;
  const ns = pl.namespace;
  const take = () => pl.acquire({ owner: 'a', op: 'delete_folder', paths: ['/c'], ttlMs: 3600000 });
  let holder = await take();
  const refused = await pl.tryAcquire({ owner: 'b', op: 'upload', paths: ['/c/x'] });
  assert.equal(refused.granted, false);
  assert.equal(refused.conflict.id, holder.id);
  const wait = async (signal) => {
    const outcome = {};
    const p = pl.tryAcquire({ owner: 'b', op: 'upload', paths: ['/c/x'], waitMs: 600000, signal });
    p.then((r) => (outcome.result = r), (e) => (outcome.error = e));
    await until(async () => (await pl.waiters()).length === 1 && (await subscribers(owner, ns)) === 1,
      `${ns}: in line and subscribed on the namespace's master`);
    for (const o of others) assert.equal(await subscribers(o, ns), 0, `${ns}: a subscription on another master`);
    return outcome;
  };
  // Woken: the lease lasts an hour and re-checks are off, so only the
  // release's message can let the waiter in before its ten minutes.
  const woken = await wait();
  assert.equal(await pl.release(holder.id, holder.token), true);
  await until(() => 'result' in woken || 'error' in woken, `${ns}: the waiter granted by the wake-up`, 10000);
  assert.equal(woken.error, undefined);
  assert.equal(woken.result.granted, true);
  assert.equal(await pl.release(woken.result.grant.id, woken.result.grant.token), true);
  // Aborted: out of the line, unsubscribed, nothing held but the holder.
  holder = await take();
  const controller = new AbortController();
  const aborted = await wait(controller.signal);
  controller.abort();
  await until(() => 'result' in aborted || 'error' in aborted, `${ns}: the aborted waiter answered`);
  assert.equal(aborted.error?.name, 'AbortError');
  assert.deepEqual(await pl.waiters(), []);
  await until(async () => (await subscribers(owner, ns)) === 0, `${ns}: the aborted waiter's subscription closed`);
  assert.deepEqual((await pl.list()).locks.map((l) => l.id), [holder.id]);
  assert.equal(await pl.release(holder.id, holder.token), true);
}

test('Cluster of three masters: a namespace on each, its calls and wake-ups on that master', async () => {
  // The launcher's cluster: up once every node says cluster_state:ok; each
  // port leaves room for its bus port (port + 10000).
  const env = await testenv('cluster', ['--masters', '3']);
  const nodes = env.info.servers;
  for (const n of nodes) assert.ok(n.port <= CLUSTER_PORT_MAX, `a cluster node on ${n.port}: its bus port is no port`);
  const conns = nodes.map((n) => plain(n.port));
  const slots = await conns[0].call('CLUSTER', 'SLOTS');
  const ownerPort = (slot) => slots.find(([lo, hi]) => slot >= lo && slot <= hi)[2][1];
  const cluster = closing(new Cluster(nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), {
    redisOptions: { autoResendUnfulfilledCommands: false },
    retryDelayOnFailover: 0,
  }));
  const first = new PathLock({ redis: cluster, namespace: 'cluster-load', library });
  await first.load();
  const seen = new Set();
  for (let i = 0; seen.size < 3 && i < 100; i++) {
    const ns = `cluster-${process.pid}-${i}`;
    const port = ownerPort(await conns[0].call('CLUSTER', 'KEYSLOT', `pl:{${ns}}:meta`));
    if (seen.has(port)) continue;
    seen.add(port);
    const pl = closing(first.forNamespace(ns));
    const at = nodes.findIndex((n) => n.port === port);
    await scenario(pl, conns[at], conns.filter((_, j) => j !== at));
    if (seen.size === 1) await cutInFlight(pl, conns[at]);
  }
  assert.equal(seen.size, 3);
});

/**
 * A call whose connection to the namespace's master is cut while the call
 * waits there (CLIENT PAUSE, then CLIENT KILL of the connection the pause
 * holds back): rejected at once with mayHaveRun, never sent again by ioredis
 * (retryDelayOnFailover: 0); a keyed acquire is sent again by the client and
 * granted once.
 */
async function cutInFlight(pl, owner) {
  const cut = async (call) => {
    await owner.call('CLIENT', 'PAUSE', '10000', 'WRITE');
    const out = {};
    call().then((r) => (out.result = r), (e) => (out.error = e));
    let id;
    await until(async () => {
      const line = (await owner.call('CLIENT', 'LIST')).split('\n').find((l) => / flags=\S*b/.test(l));
      id = line?.match(/id=(\d+)/)[1];
      return id !== undefined;
    }, 'the call held back by the pause');
    await owner.call('CLIENT', 'KILL', 'ID', id);
    await owner.call('CLIENT', 'UNPAUSE');
    await until(() => 'result' in out || 'error' in out, 'the cut call answered', 5000);
    return out;
  };
  const plain = await cut(() => pl.acquire({ owner: 'a', op: 'upload', paths: ['/cut/plain'] }));
  assert.ok(plain.error instanceof BackendError, String(plain.error ?? 'granted'));
  assert.equal(plain.error.mayHaveRun, true);
  const keyed = await cut(() => pl.acquire({ owner: 'a', op: 'upload', paths: ['/cut/keyed'], idempotencyKey: 'cut-1' }));
  assert.equal(keyed.error, undefined);
  assert.deepEqual((await pl.list()).locks.map((l) => l.id), [keyed.result.id]);
  assert.equal(await pl.release(keyed.result.id, keyed.result.token), true);
}
const { Cluster } = Redis;

test('Sentinel: the client knows only the sentinel and the master name', async () => {
  // The launcher's: up once the sentinel names the master.
  const env = await testenv('sentinel', ['--replicas', '0', '--sentinels', '1', '--master-name', 'nodemaster']);
  const master = { port: env.info.master_port };
  const sentinel = { port: env.info.ports[0] };
  const redis = closing(new Redis({
    sentinels: [{ host: '127.0.0.1', port: sentinel.port }],
    name: 'nodemaster',
    autoResendUnfulfilledCommands: false,
  }));
  const pl = closing(new PathLock({ redis, namespace: freshNamespace('sentinel'), library }));
  await scenario(pl, plain(master.port));
  // A name the sentinel does not monitor: the calls fail with a BackendError.
  const nobody = closing(new Redis({
    sentinels: [{ host: '127.0.0.1', port: sentinel.port }],
    name: 'nobody',
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    sentinelRetryStrategy: () => null,
  }));
  nobody.on('error', () => undefined);
  const lost = new PathLock({ redis: nobody, namespace: freshNamespace('sentinel'), library });
  await assert.rejects(lost.acquire({ owner: 'a', op: 'upload', paths: ['/x'] }), BackendError);
});

test('TLS: the client reaches the server only on its TLS port, with a client certificate', async () => {
  const certs = fs.mkdtempSync(path.join(os.tmpdir(), 'pathlock-node-certs-'));
  cleanups.push(() => fs.rmSync(certs, { recursive: true, force: true }));
  execFileSync('sh', [path.join(__dirname, '..', '..', '..', 'tools', 'dev', 'redis_devtools', 'make_test_certs.sh'), certs], { stdio: 'ignore' });
  const file = (name) => path.join(certs, name);
  const s = await server({ tlsDir: certs });
  const { tlsPort } = s;
  const tls = (cert) => ({ ca: fs.readFileSync(file('ca.crt')), cert: fs.readFileSync(file(`${cert}.crt`)), key: fs.readFileSync(file(`${cert}.key`)) });
  const pl = closing(new PathLock({
    redis: `rediss://127.0.0.1:${tlsPort}`,
    redisOptions: { tls: tls('client') },
    namespace: freshNamespace('tls'),
    library,
  }));
  await scenario(pl, plain(s.port));
  // A server certificate of another name: a BackendError.
  const other = closing(new PathLock({
    redis: `rediss://127.0.0.1:${tlsPort}`,
    redisOptions: { tls: { ...tls('client'), servername: 'other.example' }, maxRetriesPerRequest: 0, retryStrategy: () => null },
    namespace: freshNamespace('tls'),
    library,
  }));
  other.redis.on('error', () => undefined);
  await assert.rejects(other.acquire({ owner: 'a', op: 'upload', paths: ['/x'] }), BackendError);
});
