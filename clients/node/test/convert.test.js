'use strict';
// Conversion (docs/design.md#conversion, docs/lua-protocol.md#convert): a
// held lock given a new operation and paths in one call of the library's
// `convert`, or left exactly as it was; waiting as an acquire waits; the
// later of two converters waiting for each other answered would_deadlock;
// a lock converted by Node seen converted by the C++ engine.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { InvalidRequestError, LeaseKeeper, LockRefusedError, NotHolderError } = require('../dist/cjs/index.js');
const { until, serverFixture } = require('./support/server');
const { lineProcess } = require('./support/lines');

const CLI = process.env.PATHLOCK_CLI ?? '';
const LIMIT = { timeout: 20_000 };

const fx = serverFixture('cv');
const client = fx.client;

// The listed lock `id` (undefined when it is gone), without its lease's countdown.
async function listed(pl, id) {
  const lock = (await pl.list()).locks.find((l) => l.id === id);
  return lock && { ...lock, expiresInMs: undefined };
}

test('copy, then move: refused while an upload is in the source, granted after (same id and token, a higher fence)', LIMIT, async () => {
  const pl = client();
  const copy = await pl.acquire({ owner: 'svc', op: 'copy_folder', targets: { src: '/p/A', dst: '/q/A' } });
  const upload = await pl.acquire({ owner: 'bob', op: 'upload', paths: ['/p/A/x'] }); // the copy lets it in
  const refused = await pl.tryConvert(copy, { op: 'move_folder', targets: { src: '/p/A', dst: '/q/A' } });
  assert.equal(refused.granted, false);
  assert.equal(refused.wouldDeadlock, undefined);
  assert.deepEqual([refused.conflict.id, refused.conflict.op, refused.conflict.relation], [upload.id, 'upload', 'held_descendant']);
  await assert.rejects(pl.convert(copy, { op: 'move_folder', paths: ['/p/A', '/q/A'] }), (e) => e instanceof LockRefusedError && !e.wouldDeadlock);
  assert.equal(await pl.release(upload.id, upload.token), true);
  const move = await pl.convert(copy, { op: 'move_folder', paths: ['/p/A', '/q/A'], ttlMs: 60_000 });
  assert.deepEqual([move.id, move.token, move.holds, move.ttlMs], [copy.id, copy.token, 1, 60_000]);
  assert.ok(move.fence > upload.fence && upload.fence > copy.fence, `fences ${copy.fence}, ${upload.fence}, ${move.fence}`);
  assert.ok(move.expiresInMs > 30_000);
  const lock = await listed(pl, copy.id);
  assert.deepEqual([lock.op, lock.fence], ['move_folder', move.fence]);
  // From now on no upload gets into the source; the proof is unchanged.
  assert.equal((await pl.tryAcquire({ owner: 'bob', op: 'upload', paths: ['/p/A/y'] })).conflict.id, copy.id);
  assert.equal(await pl.held(copy.id, copy.token), true);
  assert.equal(await pl.release(copy.id, copy.token), true);
});

test('a refused conversion leaves the lock as it was', LIMIT, async () => {
  const pl = client();
  const mine = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/r/A/f'], ttlMs: 5000 });
  const other = await pl.acquire({ owner: 'b', op: 'upload', paths: ['/r/B/g'] });
  const before = await listed(pl, mine.id);
  const r = await pl.tryConvert(mine, { op: 'delete_folder', paths: ['/r/B'], ttlMs: 60_000 });
  assert.deepEqual([r.granted, r.conflict.id], [false, other.id]);
  assert.deepEqual(await listed(pl, mine.id), before);
  const [lock] = (await pl.list({ prefix: '/r/A' })).locks;
  assert.ok(lock.expiresInMs <= 5000, 'the lease is the old one');
  // what the old lock refuses is still refused, what the new one would have refused is not
  assert.equal((await pl.tryAcquire({ owner: 'c', op: 'delete_folder', paths: ['/r/A'] })).conflict.id, mine.id);
  assert.equal((await pl.tryAcquire({ owner: 'c', op: 'upload', paths: ['/r/B/h'] })).granted, true);
});

test('a wrong token is not_holder and changes nothing; bad input is InvalidRequestError', LIMIT, async () => {
  const pl = client();
  const g = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/n/f'] });
  const wrong = { id: g.id, token: `${g.token}x` };
  assert.deepEqual(await pl.tryConvert(wrong, { op: 'delete_file', paths: ['/n/f'] }), { granted: false, notHolder: true });
  await assert.rejects(pl.convert(wrong, { op: 'delete_file', paths: ['/n/f'] }), NotHolderError);
  assert.deepEqual(await pl.tryConvert({ id: 'nope', token: 't' }, { op: 'upload', paths: ['/n/f'] }), { granted: false, notHolder: true });
  assert.equal((await listed(pl, g.id)).fence, g.fence);
  const bad = [
    [{ id: g.id, token: '' }, { op: 'upload', paths: ['/n/f'] }],
    [g, { op: '', paths: ['/n/f'] }],
    [g, { op: 'upload', paths: ['relative'] }],
    [g, { op: 'upload', paths: ['/n/f'], ttlMs: 0 }],
    [g, { op: 'upload', paths: ['/n/f'], waitMs: -1 }],
    [g, { op: 'upload', paths: ['/n/f'], idempotencyKey: 'bad key' }],
    [g, { op: 'nope', targets: { target: '/n/f' } }],
    [g, { op: 'nope', paths: ['/n/f'] }], // the library's invalid
    [g, { owner: 'a', op: 'upload', paths: ['/n/f'] }],
    [g, { op: 'upload', paths: ['/n/f'], reenter: g }],
  ];
  for (const [lock, o] of bad) await assert.rejects(pl.tryConvert(lock, o), InvalidRequestError, JSON.stringify(o));
  // a lock with two holds (re-entered) is not converted
  await pl.acquire({ owner: 'a', op: 'upload', paths: ['/n/f'], reenter: g });
  await assert.rejects(pl.convert(g, { op: 'delete_file', paths: ['/n/f'] }), (e) => e instanceof InvalidRequestError && /holds/.test(e.message));
  assert.deepEqual((await listed(pl, g.id)).holds, 2);
});

test('a waiting conversion is listed with the lock it converts and granted when the blocker is released', LIMIT, async () => {
  const pl = client();
  const g = await pl.acquire({ owner: 'a', op: 'copy_folder', paths: ['/w/A', '/w/B'] });
  const blocker = await pl.acquire({ owner: 'b', op: 'upload', paths: ['/w/A/x'] }); // the copy lets it in
  const waiting = pl.tryConvert(g, { op: 'move_folder', paths: ['/w/A', '/w/B'], waitMs: 60_000 });
  await until(async () => (await pl.waiters()).length === 1, 'the conversion in line');
  const [w] = await pl.waiters();
  assert.deepEqual([w.converts, w.owner, w.op], [g.id, 'a', 'move_folder']);
  assert.deepEqual(w.targets, [{ role: 'src', path: '/w/A' }, { role: 'dst', path: '/w/B' }]);
  // a waiting acquire's converts is ''
  const acquiring = pl.tryAcquire({ owner: 'c', op: 'delete_folder', paths: ['/w/A/x'], waitMs: 60_000 });
  await until(async () => (await pl.waiters()).length === 2, 'the acquire in line');
  assert.deepEqual((await pl.waiters()).map((x) => x.converts), [g.id, '']);
  assert.equal(await pl.release(blocker.id, blocker.token), true);
  const r = await waiting;
  assert.equal(r.granted, true);
  assert.deepEqual([r.grant.id, r.grant.token], [g.id, g.token]);
  assert.ok(r.grant.fence > blocker.fence);
  assert.equal((await listed(pl, g.id)).op, 'move_folder');
  await pl.release(g.id, g.token);
  assert.equal((await acquiring).granted, true);
  assert.deepEqual(await pl.waiters(), []);
});

test("the dry run of a conversion (blockers' converts): never the lock itself, nor a place in line it refuses", LIMIT, async () => {
  const pl = client();
  const copy = await pl.acquire({ owner: 'svc', op: 'copy_folder', paths: ['/b/A', '/c/A'] });
  const upload = await pl.acquire({ owner: 'u', op: 'upload', paths: ['/b/A/x'] }); // the copy lets it in
  const other = await pl.acquire({ owner: 'o', op: 'upload', paths: ['/r/z'] });
  const controller = new AbortController();
  const waiting = pl.tryAcquire({ owner: 'd', op: 'delete_folder', paths: ['/b/A'], waitMs: 60_000, signal: controller.signal });
  waiting.catch(() => undefined); // rejected by the abort below
  await until(async () => (await pl.waiters()).length === 1, 'the delete in line');
  const [w] = await pl.waiters();
  const move = { op: 'move_folder', paths: ['/b/A', '/c/A'] };
  const ids = async (o) => {
    const r = await pl.blockers({ ...move, ...o });
    assert.equal(r.truncated, false);
    return r.blockers.map((b) => b.id).sort();
  };
  const all = [copy.id, upload.id, w.id].sort();
  assert.deepEqual(await ids({}), all);
  assert.deepEqual(await ids({ converts: copy.id }), [upload.id], 'the copy itself and the delete waiting for it are left out');
  assert.deepEqual(await ids({ converts: copy.id, fair: false }), [upload.id]);
  assert.deepEqual(await ids({ converts: other.id }), all, 'a lock elsewhere: the waiting delete refuses its conversion');
  assert.deepEqual(await ids({ converts: other.id, fair: false }), [copy.id, upload.id].sort(), 'unfair: held locks only');
  assert.deepEqual(await ids({ converts: 'no-such-lock' }), all, 'an id no lock has: the plain answer');
  for (const bad of [{ converts: '' }, { converts: 'not_an_id' }, { converts: 'a'.repeat(65) }, { fair: false }])
    await assert.rejects(pl.blockers({ ...move, ...bad }), InvalidRequestError, JSON.stringify(bad));
  controller.abort();
  await assert.rejects(waiting, (e) => e.name === 'AbortError');
  assert.deepEqual(await pl.waiters(), []);
});

test('two converters waiting for each other: the first waits, the second is answered wouldDeadlock', LIMIT, async () => {
  const pl = client();
  // Two uploads hold together on one path; each refuses a delete_folder of it.
  const a = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/d/A'] });
  const b = await pl.acquire({ owner: 'b', op: 'upload', paths: ['/d/A'] });
  const first = pl.tryConvert(a, { op: 'delete_folder', paths: ['/d/A'], waitMs: 60_000 });
  await until(async () => (await pl.waiters()).map((w) => w.converts).join() === a.id, "a's conversion in line");
  const started = Date.now();
  const second = await pl.tryConvert(b, { op: 'delete_folder', paths: ['/d/A'], waitMs: 60_000 });
  assert.ok(Date.now() - started < 10_000, 'answered at once, without waiting');
  assert.deepEqual([second.granted, second.wouldDeadlock, second.conflict.id], [false, true, a.id]);
  await assert.rejects(pl.convert(b, { op: 'delete_folder', paths: ['/d/A'] }), (e) => e instanceof LockRefusedError && e.wouldDeadlock);
  assert.equal((await listed(pl, b.id)).op, 'upload');
  assert.deepEqual((await pl.waiters()).map((w) => w.converts), [a.id], "only a's conversion waits");
  assert.equal(await pl.release(b.id, b.token), true);
  const r = await first;
  assert.deepEqual([r.granted, r.grant.id], [true, a.id]);
  assert.equal((await listed(pl, a.id)).op, 'delete_folder');
});

test('an abort while waiting leaves the lock unchanged and the line empty', LIMIT, async () => {
  const pl = client();
  const g = await pl.acquire({ owner: 'a', op: 'copy_folder', paths: ['/x/A', '/x/B'] });
  const blocker = await pl.acquire({ owner: 'b', op: 'upload', paths: ['/x/A/f'] });
  const before = await listed(pl, g.id);
  const controller = new AbortController();
  const waiting = pl.convert(g, { op: 'move_folder', paths: ['/x/A', '/x/B'], waitMs: 60_000, signal: controller.signal });
  await until(async () => (await pl.waiters()).length === 1, 'the conversion in line');
  const reason = new Error('the user went away');
  controller.abort(reason);
  await assert.rejects(waiting, (e) => e === reason);
  assert.deepEqual(await pl.waiters(), []);
  assert.deepEqual(await listed(pl, g.id), before);
  // timeoutMs: the same at its end
  const timed = await pl.tryConvert(g, { op: 'move_folder', paths: ['/x/A', '/x/B'], waitMs: 60_000, timeoutMs: 300 }).catch((e) => e);
  assert.equal(timed.name, 'TimeoutError');
  assert.deepEqual(await pl.waiters(), []);
  assert.deepEqual(await listed(pl, g.id), before);
  assert.equal(await pl.held(blocker.id, blocker.token), true);
});

test('a conversion granted as the caller aborts is never undone', LIMIT, async () => {
  const pl = client();
  const g = await pl.acquire({ owner: 'a', op: 'copy_folder', paths: ['/g/A', '/g/B'] });
  const blocker = await pl.acquire({ owner: 'b', op: 'upload', paths: ['/g/A/f'] });
  const controller = new AbortController();
  // The abort comes while the granting attempt is on the wire (right after
  // it was sent, once the blocker is released): the promise rejects at
  // once, and the grant that arrives after it stays (an acquire's is released).
  const call = fx.redis.call.bind(fx.redis);
  const raced = {};
  let armed = false;
  fx.redis.call = (...args) => {
    const p = call(...args);
    if (armed && args[0] === 'FCALL' && String(args[1]).endsWith('_convert')) {
      armed = false;
      controller.abort();
      p.then((r) => (raced.reply = r));
    }
    return p;
  };
  try {
    const waiting = pl.tryConvert(g, { op: 'move_folder', paths: ['/g/A', '/g/B'], waitMs: 60_000, signal: controller.signal });
    waiting.catch(() => undefined); // it may reject (at the abort) before the release below returns
    await until(async () => (await pl.waiters()).length === 1, 'the conversion in line');
    armed = true;
    await pl.release(blocker.id, blocker.token);
    await assert.rejects(waiting, (e) => e.name === 'AbortError');
    await until(async () => raced.reply !== undefined, 'the raced reply');
    assert.equal(raced.reply[0], 'granted');
    assert.deepEqual([(await listed(pl, g.id)).op, await pl.held(g.id, g.token)], ['move_folder', true]);
    assert.deepEqual(await pl.waiters(), []);
  } finally {
    fx.redis.call = call;
  }
});

test('the wait loop: a grant seen after the abort is answered for a conversion, given back for an acquire', LIMIT, async () => {
  const { waitFor } = require('../dist/cjs/waiting.js');
  const grant = { id: 'i', token: 't', fence: 7, expiresInMs: 1000, holds: 1, ttlMs: 1000 };
  const numbers = { recheck_ms: 200, max_reservation_ms: 2000, wake_margin_ms: 1 };
  const run = (giveBack) => {
    const controller = new AbortController();
    const steps = {
      attempt: async () => {
        controller.abort(); // the abort comes with the granting reply
        return { granted: true, grant };
      },
      listen: async () => () => undefined,
      leave: async () => undefined,
      giveBack,
    };
    const wait = { paths: ['/a'], deadline: Date.now() + 60_000, inLine: true, signal: controller.signal, numbers, recheckMs: 200 };
    return waitFor(wait, steps);
  };
  assert.deepEqual(await run(undefined), { granted: true, grant });
  const given = [];
  await assert.rejects(run((g) => given.push(g)), (e) => e.name === 'AbortError');
  assert.deepEqual(given, [grant]);
});

test('a keyed conversion whose reply was lost is sent again and gets the conversion made; an unkeyed one is not', LIMIT, async () => {
  const pl = client();
  const call = fx.redis.call.bind(fx.redis);
  let sent = 0;
  let lose = 0; // replies still to lose
  const lost = [];
  fx.redis.call = (...args) => {
    const p = call(...args);
    if (args[0] !== 'FCALL' || !String(args[1]).endsWith('_convert')) return p;
    sent++;
    return p.then((r) => {
      if (lose-- <= 0) return r;
      lost.push(r);
      throw new Error(`reply lost (test): ${r[0]}`);
    });
  };
  try {
    const keyed = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/k/A'] });
    lose = 1;
    const got = await pl.convert(keyed, { op: 'delete_folder', paths: ['/k/A'], idempotencyKey: 'conv-1' });
    assert.equal(sent, 2);
    assert.equal(lost[0][0], 'granted');
    // converted once: the lock as the lost reply made it
    assert.deepEqual([got.id, got.fence], [keyed.id, Number(lost[0][3])]);
    assert.deepEqual([(await listed(pl, keyed.id)).fence, (await listed(pl, keyed.id)).op], [got.fence, 'delete_folder']);
    assert.ok(got.fence > keyed.fence);
    // at most twice more
    lose = 3;
    sent = 0;
    await assert.rejects(pl.convert(keyed, { op: 'delete_folder', paths: ['/k/A'], idempotencyKey: 'conv-1' }), (e) => e.mayHaveRun === true);
    assert.equal(sent, 3);
    const plain = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/k/B'] });
    lose = 1;
    sent = 0;
    await assert.rejects(pl.convert(plain, { op: 'delete_folder', paths: ['/k/B'] }), (e) => e.name === 'BackendError' && e.mayHaveRun);
    assert.equal(sent, 1);
  } finally {
    fx.redis.call = call;
  }
});

test('LockGuard.convert: the guard holds the converted grant and its keeper keeps it', LIMIT, async () => {
  const pl = client();
  const keeper = new LeaseKeeper();
  fx.onClose(() => keeper.close());
  const guard = await pl.lock({ owner: 'a', op: 'copy_folder', paths: ['/l/A', '/l/B'], ttlMs: 30_000, keeper });
  const old = guard.grant;
  const renewed = new Promise((resolve) => keeper.once('renewed', resolve));
  const converted = Date.now();
  const grant = await guard.convert({ op: 'move_folder', paths: ['/l/A', '/l/B'], ttlMs: 600 });
  assert.equal(guard.grant, grant);
  assert.deepEqual([grant.id, grant.ttlMs], [old.id, 600]);
  assert.ok(guard.fence > old.fence);
  await renewed;
  assert.ok(Date.now() - converted < 5000, 'renewed after a third of the new TTL (200 ms), not of the old one (10 s)');
  assert.equal(guard.lost, false);
  await assert.rejects(guard.convert({ op: 'nope', paths: ['/l/A'] }), InvalidRequestError);
  assert.equal(guard.grant, grant);
  assert.equal(await guard.release(), true);
  await assert.rejects(guard.convert({ op: 'upload', paths: ['/l/A'] }), NotHolderError);
});

test('interop: a lock converted by Node is seen converted by the C++ engine', { ...LIMIT, skip: !(CLI && fs.existsSync(CLI)) && `no C++ pathlock '${CLI}' (set PATHLOCK_CLI)` }, async () => {
  const pl = client();
  const cpp = lineProcess(CLI, ['shell', '--backend', 'redis', '--redis', fx.server.url, '--namespace', pl.namespace]);
  fx.onClose(() => cpp.end());
  const copy = await cpp.ask('acquire svc copy_folder /i/A /j/A');
  assert.equal(copy.granted, true);
  const move = await pl.convert(copy, { op: 'move_folder', paths: ['/i/A', '/j/A'] });
  assert.deepEqual([move.id, move.token], [copy.id, copy.token]);
  const { locks } = await cpp.ask('locks');
  assert.deepEqual(locks.map((l) => [l.id, l.owner, l.op, l.targets, l.fence]), [
    [copy.id, 'svc', 'move_folder', { src: '/i/A', dst: '/j/A' }, move.fence],
  ]);
  const refused = await cpp.ask('acquire bob upload /i/A/x');
  assert.deepEqual([refused.granted, refused.conflict.id, refused.conflict.op], [false, copy.id, 'move_folder']);
  assert.deepEqual(await cpp.ask(`release ${copy.id} ${copy.token}`), { released: true });
});
