'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { LeaseKeeper, LockRefusedError } = require('../dist/cjs/index.js');
const { serverFixture } = require('./support/server');

const fx = serverFixture('k');

test('the keeper renews a kept lease', async () => {
  const pl = fx.client();
  const keeper = new LeaseKeeper();
  const guard = await pl.lock({ owner: 'a', op: 'upload', paths: ['/k/1'], ttlMs: 600, keeper });
  let renewals = 0;
  await new Promise((resolve) => keeper.on('renewed', () => ++renewals === 3 && resolve()));
  assert.equal(await guard.held(), true);
  assert.equal(guard.lost, false);
  assert.equal(await guard.release(), true);
  assert.equal(keeper.size, 0);
  assert.equal(await guard.release(), true, 'releasing twice is harmless');
});

test('a lost lease is reported; the listener may stop and release without deadlock', async () => {
  const pl = fx.client();
  const keeper = new LeaseKeeper();
  let fromCallback;
  const guard = await pl.lock({
    owner: 'a', op: 'upload', paths: ['/k/2'], ttlMs: 900, keeper,
    onLost: (lease) => (fromCallback = lease.lostReason),
  });
  const lost = new Promise((resolve, reject) =>
    keeper.once('lost', (lease, reason) => {
      // stop and release from inside the listener
      Promise.all([keeper.stop(lease), guard.release(), keeper.close()]).then((r) => resolve([reason, r[1]]), reject);
    }),
  );
  assert.equal(await pl.forceRelease(guard.grant.id), true); // an administrator took it away
  const [reason, released] = await lost;
  assert.equal(reason, 'missing');
  assert.equal(fromCallback, 'missing');
  assert.equal(guard.lost, true);
  assert.equal(released, false, 'the lock was already gone');
});

test('the guard: try/finally and Symbol.asyncDispose release it', async () => {
  const pl = fx.client();
  assert.equal(typeof Symbol.asyncDispose, 'symbol');
  const g = await pl.lock({ owner: 'a', op: 'delete_folder', paths: ['/k/3'] });
  try {
    await assert.rejects(pl.lock({ owner: 'b', op: 'upload', paths: ['/k/3/x'] }), LockRefusedError);
  } finally {
    await g[Symbol.asyncDispose]();
  }
  assert.equal(await pl.held(g.grant.id, g.grant.token), false);
  const h = await pl.lock({ owner: 'b', op: 'upload', paths: ['/k/3/x'] });
  await h.release();
});
