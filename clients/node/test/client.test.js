'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const {
  PathLock, LockRefusedError, InvalidRequestError, NotHolderError, BackendError, LayoutError, parseLibrary,
} = require('../dist/cjs/index.js');
const { freshNamespace, library, serverFixture } = require('./support/server');

const fx = serverFixture();
const client = fx.client;

test('grant and refusal name the conflicting lock', async () => {
  const pl = client();
  const a = await pl.acquire({ owner: 'alice', op: 'move_folder', paths: ['/p/A/C', '/p/B'] });
  assert.equal(a.holds, 1);
  assert.ok(Number.isSafeInteger(a.fence) && a.fence > 0);
  assert.match(a.id, /^[0-9a-f]{24}$/);
  assert.match(a.token, /^[0-9a-f]{32}$/);
  const r = await pl.tryAcquire({ owner: 'bob', op: 'upload', paths: ['/p/A/C/x'] });
  assert.equal(r.granted, false);
  assert.deepEqual({ ...r.conflict, expiresInMs: 0 }, {
    id: a.id, op: 'move_folder', role: 'src', path: '/p/A/C', owner: 'alice', expiresInMs: 0,
    requestedRole: 'target', requestedPath: '/p/A/C/x', relation: 'held_ancestor', queued: false,
  });
  await assert.rejects(pl.acquire({ owner: 'bob', op: 'upload', targets: { target: '/p/A/C/x' } }), (e) => {
    assert.ok(e instanceof LockRefusedError);
    assert.equal(e.conflict.id, a.id);
    return true;
  });
  // the owner is no proof: the same owner is refused too
  assert.equal((await pl.tryAcquire({ owner: 'alice', op: 'move_folder', paths: ['/p/A/C', '/p/B'] })).granted, false);
  assert.equal(await pl.release(a.id, a.token), true);
  assert.equal(await pl.release(a.id, a.token), false);
  const b = await pl.acquire({ owner: 'bob', op: 'upload', paths: ['/p//A/C/x/'] });
  assert.ok(b.fence > a.fence);
  const page = await pl.list();
  assert.deepEqual(page.locks.map((l) => [l.id, l.targets]), [[b.id, [{ role: 'target', path: '/p/A/C/x' }]]]);
});

test('reentry by proof, not_holder, idempotency keys', async () => {
  const pl = client();
  const g = await pl.acquire({ owner: 'ann', op: 'upload', paths: ['/d/f'] });
  const again = await pl.acquire({ owner: 'ann', op: 'upload', paths: ['/d/f'], reenter: { id: g.id, token: g.token } });
  assert.deepEqual([again.id, again.token, again.fence, again.holds], [g.id, g.token, g.fence, 2]);
  await assert.rejects(pl.acquire({ owner: 'ann', op: 'upload', paths: ['/d/f'], reenter: { id: g.id, token: 'wrong' } }), NotHolderError);
  const r = await pl.tryAcquire({ owner: 'ann', op: 'upload', paths: ['/d/f'], reenter: { id: g.id, token: 'wrong' } });
  assert.deepEqual(r, { granted: false, notHolder: true });
  await assert.rejects(pl.acquire({ owner: 'ann', op: 'delete_file', paths: ['/d/f'], reenter: g }), InvalidRequestError);
  assert.equal(await pl.release(g.id, g.token), true); // holds 2 -> 1
  assert.equal(await pl.held(g.id, g.token), true);
  assert.equal(await pl.release(g.id, g.token), true); // -> gone
  assert.equal(await pl.held(g.id, g.token), false);

  const k1 = await pl.acquire({ owner: 'ann', op: 'upload', paths: ['/d/g'], idempotencyKey: 'req-1' });
  const k2 = await pl.acquire({ owner: 'ann', op: 'upload', paths: ['/d/g'], idempotencyKey: 'req-1' });
  assert.deepEqual([k2.id, k2.token, k2.fence, k2.holds], [k1.id, k1.token, k1.fence, 1]);
  await assert.rejects(pl.acquire({ owner: 'bob', op: 'upload', paths: ['/d/g'], idempotencyKey: 'req-1' }), InvalidRequestError);
});

test('bad input is InvalidRequestError before or from Redis', async () => {
  const pl = client();
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['relative'] }), InvalidRequestError);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['/p/../x'] }), InvalidRequestError);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'nope', paths: ['/p'] }), /unknown operation 'nope'/);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['/p', '/q'] }), InvalidRequestError);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['/p'], ttlMs: 0 }), InvalidRequestError);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['/p'], ttlMs: 1.5 }), InvalidRequestError);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'move_folder', paths: ['/p/A', '/p/A/C'] }), InvalidRequestError);
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['/p'], idempotencyKey: 'bad key' }), InvalidRequestError);
  assert.throws(() => new PathLock({ redis: fx.redis, namespace: 'has space', library }), InvalidRequestError);
  const Redis = require('ioredis');
  const resending = new Redis(fx.server.url, { lazyConnect: true });
  assert.throws(() => new PathLock({ redis: resending, namespace: 'x', library }), /autoResendUnfulfilledCommands/);
  resending.disconnect();
  // A Cluster that would send a command again after its connection closed.
  const port = Number(new URL(fx.server.url).port);
  const opts = { lazyConnect: true, redisOptions: { autoResendUnfulfilledCommands: false } };
  const failover = new Redis.Cluster([{ host: '127.0.0.1', port }], opts);
  assert.throws(() => new PathLock({ redis: failover, namespace: 'x', library }), /retryDelayOnFailover: 0/);
  failover.disconnect();
  const still = new Redis.Cluster([{ host: '127.0.0.1', port }], { ...opts, redisOptions: {} });
  assert.throws(() => new PathLock({ redis: still, namespace: 'x', library }), /autoResendUnfulfilledCommands/);
  still.disconnect();
});

test('renew, force release, paged list, blockers', async () => {
  const pl = client();
  const g = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/l/1'], ttlMs: 5000 });
  const r = await pl.renew(g.id, g.token, 60000);
  assert.equal(r.renewed, true);
  assert.ok(r.expiresInMs > 5000);
  assert.deepEqual(await pl.renew(g.id, 'nope'), { renewed: false });
  const ids = [g.id];
  for (let i = 2; i <= 5; i++) ids.push((await pl.acquire({ owner: 'a', op: 'upload', paths: [`/l/${i}`] })).id);
  const seen = [];
  let after = null;
  let pages = 0;
  do {
    const page = await pl.list({ prefix: '/l', limit: 2, after });
    seen.push(...page.locks.map((l) => l.id));
    after = page.next;
    pages++;
  } while (after !== null);
  assert.deepEqual(seen, ids);
  assert.ok(pages >= 3);
  const all = [];
  for await (const l of pl.listAll('/l', 2)) all.push(l.id);
  assert.deepEqual(all, ids);
  const b = await pl.blockers({ op: 'delete_folder', paths: ['/l'] });
  assert.equal(b.truncated, false);
  assert.deepEqual(b.blockers.map((x) => [x.id, x.relation, x.queued]).sort(), ids.map((id) => [id, 'held_descendant', false]).sort());
  assert.equal(await pl.forceRelease(g.id), true);
  assert.equal(await pl.forceRelease(g.id), false);
  assert.equal(await pl.held(g.id, g.token), false);
});

test('a server without the library gets it loaded and the call sent again', async () => {
  const pl = client();
  await fx.redis.call('FUNCTION', 'FLUSH');
  const g = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/f/x'] });
  assert.equal(await pl.held(g.id, g.token), true);
  // a second client loading the same text: "already exists" is success
  await client().load();
  // a client given only the prefix, and one that discovers the library
  const name = parseLibrary(library).prefix;
  const byPrefix = new PathLock({ redis: fx.redis, namespace: pl.namespace, functionPrefix: name });
  const discovered = new PathLock({ redis: fx.redis, namespace: pl.namespace });
  fx.onClose(() => byPrefix.close());
  fx.onClose(() => discovered.close());
  assert.equal(await byPrefix.held(g.id, g.token), true);
  assert.equal(await discovered.held(g.id, g.token), true);
  assert.deepEqual(await discovered.rolesOf('move_folder'), ['src', 'dst']);
  const d = await discovered.describe();
  assert.equal(d.prefix, name);
  assert.match(d.fingerprint, /^[0-9a-f]+$/);
  // without the text, a missing library is a BackendError
  await fx.redis.call('FUNCTION', 'FLUSH');
  await assert.rejects(byPrefix.held(g.id, g.token), BackendError);
});

test('a namespace of another layout is a LayoutError', async () => {
  const pl = client();
  await fx.redis.hset(`pl:{${pl.namespace}}:meta`, 'layout', '9');
  await assert.rejects(pl.acquire({ owner: 'a', op: 'upload', paths: ['/x'] }), (e) => e instanceof LayoutError && e.stored === 9);
});

test('namespaces never interact, and forNamespace shares the connection', async () => {
  const a = client();
  const b = a.forNamespace(freshNamespace());
  fx.onClose(() => b.close());
  await a.acquire({ owner: 'a', op: 'delete_folder', paths: ['/'] });
  await b.acquire({ owner: 'b', op: 'delete_folder', paths: ['/'] });
  assert.equal(b.redis, a.redis);
});

test('owners follow the engine\'s rules: control characters, bad UTF-8 and over 256 bytes are refused', async () => {
  const pl = client();
  const refused = {
    'f\x01z': 'owner has control character 0x01 at byte 1',
    'tab\there': 'owner has control character 0x09 at byte 3',
    'del\x7f': 'owner has control character 0x7F at byte 3',
    'nul\x00': 'owner has control character 0x00 at byte 3',
    'lone\ud800': 'owner has invalid UTF-8 (a lone surrogate)',
    ['é'.repeat(129)]: 'owner is 258 bytes; the limit is 256',
    '': 'owner is empty',
  };
  for (const [owner, message] of Object.entries(refused))
    await assert.rejects(pl.acquire({ owner, op: 'upload', paths: ['/o/x'] }), (e) => e instanceof InvalidRequestError && e.message === message);
  assert.deepEqual((await pl.list()).locks, [], 'nothing taken');
  for (const owner of ['x'.repeat(256), 'Zoë Ünïcode 名前', 'bob smith']) {
    const g = await pl.acquire({ owner, op: 'upload', paths: ['/o/x'] });
    const [lock] = (await pl.list()).locks;
    assert.equal(lock.owner, owner);
    await pl.release(g.id, g.token);
  }
});

test('load() accepts its own library already loaded and refuses another under the same name', async () => {
  const pl = client();
  await pl.load();
  await pl.load(); // idempotent
  const changed = `${library.trimEnd()}\n-- another build of the same name\n`;
  await fx.redis.call('FUNCTION', 'LOAD', 'REPLACE', changed);
  try {
    await assert.rejects(pl.load(), (e) => e instanceof BackendError && /another library named pathlock_v4_/.test(e.message));
  } finally {
    await fx.redis.call('FUNCTION', 'LOAD', 'REPLACE', library);
  }
  await pl.load();
});
