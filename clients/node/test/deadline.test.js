'use strict';
// Deadlines honoured in flight: a server kept busy (CLIENT PAUSE) does not
// hold a call past its signal; a grant that arrives after the caller gave up
// is released. The keeper's lease signal aborts when the lease is lost.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { LeaseKeeper, LeaseLostError } = require('../dist/cjs/index.js');
const { serverFixture, connect, until } = require('./support/server');

const fx = serverFixture('dl');
// The promise rejects on the signal's abort event; this is the scheduling
// margin the tests allow beyond the deadline (docs/node.md says it).
const MARGIN_MS = 150;
const DEADLINE_MS = 200;

// Pauses every client of the server for `ms` from a connection of its own.
async function pauseServer(ms) {
  const pauser = connect(fx.server.url);
  await pauser.call('CLIENT', 'PAUSE', String(ms), 'ALL');
  pauser.disconnect();
}

// The contract and the default limits are read on first use: an acquire
// elsewhere reads them, so that what stalls afterwards is the acquire.
async function warmUp(pl) {
  const warm = await pl.acquire({ owner: 'w', op: 'upload', paths: ['/warm'] });
  await pl.release(warm.id, warm.token);
}

async function rejectsInTime(call, name) {
  const start = Date.now();
  await assert.rejects(call, (e) => e.name === name);
  const took = Date.now() - start;
  assert.ok(took >= DEADLINE_MS - 5 && took < DEADLINE_MS + MARGIN_MS, `rejected after ${took} ms`);
}

for (const waitMs of [0, 60_000]) {
  test(`acquire (waitMs ${waitMs}) on a stalled server rejects at its deadline; the late grant is released`, async () => {
    const pl = fx.client();
    // A release publishes its paths on the namespace's wake channel: the
    // late grant's release shows there.
    const sub = connect(fx.server.url);
    fx.onClose(() => sub.disconnect());
    const released = [];
    sub.on('smessage', (_channel, message) => released.push(message));
    await sub.ssubscribe(`pl:{${pl.namespace}}:wake`);
    await warmUp(pl);
    await pauseServer(2000);
    const signal = AbortSignal.timeout(DEADLINE_MS);
    await rejectsInTime(pl.acquire({ owner: 'b', op: 'upload', paths: ['/d/x'], waitMs, signal }), 'TimeoutError');
    // The paused call ran after the pause and was granted; then the client
    // released it (and left the line).
    await until(async () => released.includes('/d/x'), 'the late grant released', 5000);
    assert.deepEqual((await pl.list()).locks, []);
    assert.deepEqual(await pl.waiters(), []);
  });
}

test('held and renew with a signal reject at the deadline on a stalled server', async () => {
  const pl = fx.client();
  const g = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/h/x'] });
  await pauseServer(1000);
  await rejectsInTime(pl.held(g.id, g.token, { signal: AbortSignal.timeout(DEADLINE_MS) }), 'TimeoutError');
  await rejectsInTime(pl.renew(g.id, g.token, undefined, { signal: AbortSignal.timeout(DEADLINE_MS) }), 'TimeoutError');
  assert.equal(await pl.held(g.id, g.token), true);
});

test('the lease signal aborts with a LeaseLostError when the lease is lost', async () => {
  const pl = fx.client();
  const keeper = new LeaseKeeper();
  fx.onClose(() => keeper.close());
  const guard = await pl.lock({ owner: 'a', op: 'upload', paths: ['/s/x'], ttlMs: 600, keeper });
  assert.equal(guard.signal.aborted, false);
  const aborted = new Promise((resolve) => guard.signal.addEventListener('abort', resolve));
  await pl.forceRelease(guard.grant.id);
  await aborted;
  assert.ok(guard.signal.reason instanceof LeaseLostError);
  assert.equal(guard.signal.reason.reason, 'missing');
  assert.equal(guard.lost, true);
});

test('keep() stops keeping when its signal aborts', async () => {
  const pl = fx.client();
  const keeper = new LeaseKeeper();
  fx.onClose(() => keeper.close());
  const g = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/s/y'], ttlMs: 600 });
  const controller = new AbortController();
  const lease = keeper.keep(pl, g, { signal: controller.signal });
  assert.equal(keeper.size, 1);
  controller.abort();
  assert.equal(keeper.size, 0);
  assert.equal(lease.signal.aborted, false, 'stopping is not losing');
});

// deadline_ms (docs/lua-protocol.md#deadlines): with timeoutMs the acquire
// tells the server when its caller gives up, so the paused call, run after
// the pause, grants nothing. The listing is sent on the same connection
// during the pause, behind the paused call and before any release of a late
// grant (sent when its reply arrives): it would show a late grant.
for (const [how, options] of [
  ['timeoutMs', { timeoutMs: DEADLINE_MS }],
  ['timeoutMs and a signal', { timeoutMs: DEADLINE_MS, signal: new AbortController().signal }],
]) {
  test(`acquire with ${how} on a stalled server rejects at its deadline and the late run grants nothing`, async () => {
    const pl = fx.client();
    await warmUp(pl);
    await pauseServer(1000);
    await rejectsInTime(pl.acquire({ owner: 'b', op: 'upload', paths: ['/t/x'], ...options }), 'TimeoutError');
    assert.deepEqual((await pl.list()).locks, []);
  });
}

test('timeoutMs is checked', async () => {
  const pl = fx.client();
  await assert.rejects(pl.acquire({ owner: 'b', op: 'upload', paths: ['/t/y'], timeoutMs: 0 }), (e) => e.name === 'InvalidRequestError');
});

// ioredis, told not to resend (autoResendUnfulfilledCommands: false), drops
// the commands of a connection that closes without settling them: the
// client rejects them itself (BackendError, mayHaveRun), never hangs, and
// does not send an unkeyed acquire again.
test('an acquire whose connection is cut in flight rejects and takes nothing', { timeout: 20_000 }, async () => {
  const pl = fx.client();
  await pl.contract();
  const admin = connect(fx.server.url);
  fx.onClose(() => admin.disconnect());
  await admin.call('CLIENT', 'PAUSE', '20000', 'WRITE');
  const call = pl.acquire({ owner: 'b', op: 'upload', paths: ['/k/x'] });
  call.catch(() => undefined); // rejects before assert.rejects looks at it
  // Blocked by the pause (flag b): a connection's last command shows as cmd= long after it ran.
  const inFlight = async () =>
    String(await admin.call('CLIENT', 'LIST')).split('\n').find((l) => / flags=b /.test(l) && / cmd=fcall /.test(l));
  await until(inFlight, 'the acquire in flight', 5000);
  const id = /^id=(\d+) /.exec(await inFlight())[1];
  await admin.call('CLIENT', 'KILL', 'ID', id);
  await admin.call('CLIENT', 'UNPAUSE');
  await assert.rejects(call, (e) => e.name === 'BackendError' && e.mayHaveRun === true);
  assert.deepEqual((await pl.list()).locks, []);
});
