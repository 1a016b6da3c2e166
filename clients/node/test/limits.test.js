'use strict';
// Limits per namespace (protocol 4.3): the semantics are the engine's
// (tests/conformance/tenant_limits_test.cpp); these check what the Node
// client adds: the overLimit outcome, the admin calls, and the default
// limits read from pl:limits and sent with every acquire.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const Redis = require('ioredis');
const { PathLock, OverLimitError, LockRefusedError, InvalidRequestError, DEFAULT_LIMITS_KEY, MAX_LIMIT } =
  require('../dist/cjs/index.js');
const { library, serverFixture, until } = require('./support/server');

const fx = serverFixture('lim');
const client = fx.client;
const up = (owner, path, more = {}) => ({ owner, op: 'upload', paths: [path], ...more });
const over = (limit, max, count) => ({ granted: false, overLimit: { limit, max, count } });

// pl:limits for one test (deleted at its end).
async function withDefault(text, body) {
  await fx.redis.call('SET', DEFAULT_LIMITS_KEY, text);
  try {
    await body();
  } finally {
    await fx.redis.call('DEL', DEFAULT_LIMITS_KEY);
  }
}

test("a namespace's own limit on locks refuses the next new lock and takes nothing", async () => {
  const pl = client();
  await pl.setLimits({ locks: 3 });
  const held = [];
  for (let i = 0; i < 3; i++) held.push(await pl.acquire(up('alice', `/t/f${i}`)));
  assert.deepEqual(await pl.tryAcquire(up('bob', '/t/more')), over('locks', 3, 3));
  await assert.rejects(pl.acquire(up('bob', '/t/more')), (e) => {
    assert.ok(e instanceof OverLimitError && !(e instanceof LockRefusedError));
    assert.deepEqual([e.limit, e.max, e.count], ['locks', 3, 3]);
    return true;
  });
  assert.deepEqual((await pl.list({ prefix: '/t/more' })).locks, []);
  // A reentry creates no lock: not limited. The limit is judged before the
  // conflicts: a request that also conflicts is told of the limit.
  assert.equal((await pl.tryAcquire(up('alice', '/t/f0', { reenter: held[0] }))).granted, true);
  assert.deepEqual(await pl.tryAcquire({ owner: 'carol', op: 'delete_folder', paths: ['/t'] }), over('locks', 3, 3));
  assert.deepEqual(await pl.limits(), {
    defaults: { locks: null, places: null, ownerLocks: null },
    own: { locks: 3, places: null, ownerLocks: null },
    effective: { locks: 3, places: null, ownerLocks: null },
    locks: 3, places: 0, ownerLocks: 3, owner: 'alice',
  });
  // A lock that goes makes room for one; taken away, no limit is left.
  assert.equal(await pl.release(held[1].id, held[1].token), true);
  assert.equal((await pl.tryAcquire(up('bob', '/t/more'))).granted, true);
  await pl.setLimits(null);
  assert.equal((await pl.tryAcquire(up('bob', '/t/more2'))).granted, true);
  assert.equal((await pl.limits()).own, null);
});

test("the limit on one owner's locks refuses that owner only", async () => {
  const pl = client();
  await pl.setLimits({ ownerLocks: 2 });
  await pl.acquire(up('alice', '/o/1'));
  await pl.acquire(up('alice', '/o/2'));
  assert.deepEqual(await pl.tryAcquire(up('alice', '/o/3')), over('owner_locks', 2, 2));
  assert.equal((await pl.tryAcquire(up('bob', '/o/3'))).granted, true);
});

test('a waiting acquire refused by a limit is answered at once, out of the line', async () => {
  const pl = client();
  await pl.setLimits({ locks: 1 });
  await pl.acquire(up('alice', '/a/1'));
  const start = performance.now();
  assert.deepEqual(await pl.tryAcquire(up('bob', '/a/2', { waitMs: 20000 })), over('locks', 1, 1));
  assert.ok(performance.now() - start < 10000);
  assert.deepEqual(await pl.waiters(), []);
});

test('the limit on places in line refuses a second waiter at once', async () => {
  const pl = client();
  await pl.setLimits({ places: 1 });
  const blocker = await pl.acquire({ owner: 'alice', op: 'delete_folder', paths: ['/p'] });
  const first = pl.tryAcquire(up('bob', '/p/x', { waitMs: 60000 }));
  await until(async () => (await pl.waiters()).length === 1, 'bob in line');
  const start = performance.now();
  assert.deepEqual(await pl.tryAcquire(up('carol', '/p/y', { waitMs: 20000 })), over('places', 1, 1));
  assert.ok(performance.now() - start < 10000);
  assert.equal((await pl.waiters()).length, 1);
  assert.equal(await pl.release(blocker.id, blocker.token), true);
  assert.equal((await first).granted, true);
});

test('the default limits come from pl:limits, for namespaces without their own', async () => {
  await withDefault('2 - -', async () => {
    const pl = client(); // a new client: reads pl:limits on its first acquire
    const own = pl.forNamespace(`${pl.namespace}-own`);
    await own.setLimits({}); // its own limits: none
    for (let i = 0; i < 2; i++) await pl.acquire(up('alice', `/d/${i}`));
    assert.deepEqual(await pl.tryAcquire(up('alice', '/d/2')), over('locks', 2, 2));
    for (let i = 0; i < 3; i++) assert.equal((await own.tryAcquire(up('alice', `/d/${i}`))).granted, true);
    const s = await pl.limits();
    assert.deepEqual([s.defaults, s.own, s.effective, s.locks], [{ locks: 2, places: null, ownerLocks: null }, null, s.defaults, 2]);
  });
});

// GETs the server has run (INFO commandstats).
async function getCalls() {
  const m = /cmdstat_get:calls=(\d+)/.exec(await fx.redis.call('INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

test('the default is read at most every 5 s; setDefaultLimits applies to its client at once', async () => {
  await fx.redis.call('DEL', DEFAULT_LIMITS_KEY);
  const pl = client();
  await pl.acquire(up('alice', '/c/0')); // reads: no default
  await withDefault('1 - -', async () => {
    const gets = await getCalls();
    for (let i = 1; i <= 5; i++) await pl.acquire(up('alice', `/c/${i}`));
    assert.equal((await getCalls()) - gets, 0, 'no GET within the refresh period');
    pl['shared'].defaults.expire(); // as after the refresh period
    assert.deepEqual(await pl.tryAcquire(up('alice', '/c/6')), over('locks', 1, 6));
    await pl.setDefaultLimits({});
    assert.equal(await fx.redis.call('EXISTS', DEFAULT_LIMITS_KEY), 0);
    assert.equal((await pl.tryAcquire(up('alice', '/c/6'))).granted, true);
    await pl.setDefaultLimits({ locks: 7 });
    assert.equal(await fx.redis.call('GET', DEFAULT_LIMITS_KEY), '7 - -');
  });
});

test('a user who may not GET pl:limits gets no default, and one warning', async () => {
  await withDefault('0 - -', async () => {
    const user = `nolimits${process.pid}`;
    await fx.redis.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-get');
    const url = new URL(fx.server.url);
    const redis = new Redis({ host: url.hostname, port: Number(url.port), username: user, password: 'pw',
      autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
    const warnings = [];
    const pl = new PathLock({ redis, namespace: `nolimits-${Date.now()}`, library, onWarning: (m) => warnings.push(m) });
    try {
      assert.equal((await pl.tryAcquire(up('alice', '/n/1'))).granted, true);
      pl['shared'].defaults.expire();
      assert.equal((await pl.tryAcquire(up('alice', '/n/2'))).granted, true);
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], /may not GET pl:limits/);
    } finally {
      await pl.close();
      redis.disconnect();
      await fx.redis.call('ACL', 'DELUSER', user);
    }
  });
});

test('bad limits are InvalidRequestError', async () => {
  const pl = client();
  for (const bad of [{ locks: MAX_LIMIT + 1 }, { places: -1 }, { ownerLocks: 1.5 }]) {
    await assert.rejects(pl.setLimits(bad), InvalidRequestError);
    await assert.rejects(pl.setDefaultLimits(bad), InvalidRequestError);
  }
  assert.equal((await pl.limits()).own, null);
});
