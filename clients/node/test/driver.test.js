'use strict';
// The driver (bin/pathlock-node-shell) and interoperation with the C++
// `pathlock shell` on one namespace of one server.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { freshNamespace, until, libraryFile, serverFixture } = require('./support/server');
const { lineProcess } = require('./support/lines');

const DRIVER = path.join(__dirname, '..', 'bin', 'pathlock-node-shell');
const CLI = process.env.PATHLOCK_CLI ?? '';

const fx = serverFixture();

function driver(ns) {
  const d = lineProcess(process.execPath, [DRIVER, '--redis', fx.server.url, '--namespace', ns], {
    ...process.env,
    PATHLOCK_LIBRARY: libraryFile,
  });
  fx.onClose(() => d.end());
  return d;
}
const client = fx.client;

test('driver: hello, acquire, refusal, locks, errors', async () => {
  const ns = freshNamespace('d');
  const d = driver(ns);
  assert.deepEqual(await d.ask('hello'), { client: 'pathlock-node', version: require('../package.json').version, features: ['cancel', 'blockers', 'waiters', 'deadline', 'keep', 'protocol', 'convert'] });
  const g = await d.ask('acquire "bob smith" delete_folder "/p/My Documents"');
  assert.equal(g.granted, true);
  assert.deepEqual(Object.keys(g), ['granted', 'id', 'token', 'fence', 'holds', 'expires_in_ms']);
  const r = await d.ask('acquire carol upload "/p/My Documents/x"');
  assert.deepEqual(Object.keys(r.conflict), ['id', 'op', 'role', 'path', 'owner', 'expires_in_ms', 'requested_role', 'requested_path', 'relation', 'queued']);
  assert.equal(r.conflict.owner, 'bob smith');
  assert.equal(r.conflict.relation, 'held_ancestor');
  d.send('# a comment');
  d.send('');
  assert.equal((await d.ask('locks')).locks[0].id, g.id);
  assert.ok('error' in (await d.ask('acquire a upload relative')));
  assert.ok('error' in (await d.ask('acquire a upload /x\r')));
  assert.ok('error' in (await d.ask('frobnicate')));
  assert.deepEqual(await d.ask('cancel'), { cancelled: false });
  assert.deepEqual(await d.ask(`release ${g.id} ${g.token}`), { released: true });
});

test('driver: cancel stops a wait while stdin is read; later lines answered in order', async () => {
  const ns = freshNamespace('d');
  const pl = client(ns);
  const a = await pl.acquire({ owner: 'alice', op: 'delete_folder', paths: ['/c'] });
  const d = driver(ns);
  d.send('acquire bob upload /c/x wait=60000');
  await until(async () => (await pl.waiters()).length === 1, 'bob in line');
  d.send('held nope nope');
  d.send('cancel');
  assert.deepEqual(await d.next(), { granted: false, cancelled: true });
  assert.deepEqual(await d.next(), { held: false }); // every line in the order it was sent
  assert.deepEqual(await d.next(), { cancelled: true });
  assert.deepEqual(await pl.waiters(), []);
  assert.deepEqual((await pl.list()).locks.map((l) => l.id), [a.id]);
  // end of input during a wait does not cancel it: the wait runs out
  d.send('acquire bob upload /c/y wait=400');
  const code = d.end();
  const last = await d.next();
  assert.equal(last.granted, false);
  assert.equal(last.conflict.id, a.id);
  assert.equal(await code, 0);
});

test('driver: convert answers as acquire, would_deadlock, not_holder; waiters name the lock converted', { timeout: 20_000 }, async () => {
  const ns = freshNamespace('d');
  const pl = client(ns);
  const d = driver(ns);
  const copy = await d.ask('acquire svc copy_folder /v/A /v/B');
  const upload = await pl.acquire({ owner: 'bob', op: 'upload', paths: ['/v/A/x'] });
  const refused = await d.ask(`convert ${copy.id} ${copy.token} move_folder /v/A /v/B`);
  assert.deepEqual([refused.granted, Object.keys(refused), refused.conflict.id], [false, ['granted', 'conflict'], upload.id]);
  d.send(`convert ${copy.id} ${copy.token} move_folder /v/A /v/B wait=60000 ttl=60000`);
  await until(async () => (await pl.waiters()).length === 1, 'the conversion in line');
  d.send('cancel'); // does not stop a conversion: answered after it
  const listed = await pl.waiters();
  assert.equal(await pl.release(upload.id, upload.token), true);
  const move = await d.next();
  assert.deepEqual(Object.keys(move), ['granted', 'id', 'token', 'fence', 'holds', 'expires_in_ms']);
  assert.deepEqual([move.id, move.token, move.holds], [copy.id, copy.token, 1]);
  assert.ok(move.fence > upload.fence && move.expires_in_ms > 30_000);
  assert.deepEqual(await d.next(), { cancelled: false });
  assert.equal(listed[0].converts, copy.id);
  assert.deepEqual(await d.ask(`convert ${copy.id} wrong upload /v/A`), { granted: false, not_holder: true });
  // two uploads on one path, each converting to a delete_folder of it (a waits in another driver)
  const d2 = driver(ns);
  const a = await d2.ask('acquire a upload /u/A');
  const b = await d.ask('acquire b upload /u/A');
  d2.send(`convert ${a.id} ${a.token} delete_folder /u/A wait=60000`);
  await until(async () => (await d.ask('waiters')).waiters.some((w) => w.converts === a.id), "a's conversion in line");
  const w = (await d.ask('waiters')).waiters[0];
  assert.deepEqual(Object.keys(w), ['id', 'owner', 'op', 'targets', 'waited_ms', 'expires_in_ms', 'converts']);
  const deadlock = await d.ask(`convert ${b.id} ${b.token} delete_folder /u/A wait=60000`);
  assert.deepEqual([Object.keys(deadlock), deadlock.conflict.id], [['granted', 'would_deadlock', 'conflict'], a.id]);
  assert.deepEqual(await d.ask(`release ${b.id} ${b.token}`), { released: true });
  assert.equal((await d2.next()).id, a.id);
  d2.send('acquire c upload /u/A/x wait=60000');
  let ws;
  await until(async () => (ws = (await d.ask('waiters')).waiters).length === 1, 'the acquire in line');
  assert.equal('converts' in ws[0], false, 'a waiting acquire names no lock converted');
  d2.send('cancel');
  assert.deepEqual(await d2.next(), { granted: false, cancelled: true });
  for (const bad of ['convert', `convert ${a.id} ${a.token} upload`, `convert ${a.id} ${a.token} nope /x`, `convert ${a.id} ${a.token} upload /x fair=maybe`,
    `convert ${a.id} ${a.token} upload /x ttl=1 ttl=2`, `convert ${a.id} ${a.token} upload relative`, `convert ${a.id} "" upload /x`])
    assert.ok('error' in (await d.ask(bad)), bad);
});

test('interop: the C++ shell and the Node client share locks, wake-ups and the line', { skip: !(CLI && fs.existsSync(CLI)) && `no C++ pathlock '${CLI}' (set PATHLOCK_CLI)` }, async () => {
  const ns = freshNamespace('i');
  const pl = client(ns);
  const cpp = lineProcess(CLI, ['shell', '--backend', 'redis', '--redis', fx.server.url, '--namespace', ns]);
  fx.onClose(() => cpp.end());
  const held = await cpp.ask('acquire alice move_folder /p/A/C /p/B');
  assert.equal(held.granted, true);
  const refused = await pl.tryAcquire({ owner: 'bob', op: 'upload', paths: ['/p/A/C/x'] });
  assert.equal(refused.conflict.id, held.id);
  // Node waits; the C++ shell's release wakes it
  const waiting = pl.tryAcquire({ owner: 'bob', op: 'upload', paths: ['/p/B/y'], waitMs: 60000 });
  await until(async () => (await pl.waiters()).length === 1, 'bob in line');
  assert.deepEqual(await cpp.ask(`release ${held.id} ${held.token}`), { released: true });
  const got = await waiting;
  assert.equal(got.granted, true);
  assert.ok(got.grant.fence > held.fence);
  // the C++ shell sees the Node lock and is refused by it
  const listed = await cpp.ask('locks');
  assert.deepEqual(listed.locks.map((l) => [l.id, l.owner, l.targets]), [[got.grant.id, 'bob', { target: '/p/B/y' }]]);
  const r = await cpp.ask('acquire carol delete_folder /p/B');
  assert.equal(r.conflict.id, got.grant.id);
  assert.equal(r.conflict.relation, 'held_descendant');
  // the C++ shell waits, the Node client releases
  cpp.send('acquire carol delete_folder /p/B wait=60000');
  await until(async () => (await pl.waiters()).length === 1, 'carol in line');
  assert.equal(await pl.release(got.grant.id, got.grant.token), true);
  assert.equal((await cpp.next()).granted, true);
  // reentry across clients by proof
  const n = await cpp.ask('acquire dave upload /q/z');
  const again = await pl.acquire({ owner: 'dave', op: 'upload', paths: ['/q/z'], reenter: { id: n.id, token: n.token } });
  assert.equal(again.holds, 2);
});
