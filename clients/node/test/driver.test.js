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
  assert.deepEqual(await d.ask('hello'), { client: 'pathlock-node', version: require('../package.json').version, features: ['cancel', 'blockers', 'waiters', 'deadline', 'keep', 'protocol'] });
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
