'use strict';
// The library's contract (FCALL_RO <prefix>contract 0, protocol 4.2) is what
// the client knows of operations, roles and limits: the answer of a real
// redis-server, the block docs/lua-protocol.md shows, and an older library
// (no `contract`) refused with an error naming the protocol.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { PathLock, BackendError, InvalidRequestError, parseLibrary } = require('../dist/cjs/index.js');
const { library, serverFixture } = require('./support/server');

const fx = serverFixture('ct');

// docs/lua-protocol.md's contract block (between <!-- contract --> and <!-- /contract -->).
function documentedContract() {
  const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'lua-protocol.md'), 'utf8');
  const block = doc.slice(doc.indexOf('<!-- contract -->'), doc.indexOf('<!-- /contract -->'));
  return JSON.parse(block.slice(block.indexOf('{'), block.lastIndexOf('}') + 1));
}

// The shipped library as a library older than 4.2 would be: another name,
// and no function `contract` registered.
function olderLibrary() {
  const hash = /^#!lua name=pathlock_v4_([0-9a-f]+)/.exec(library)[1];
  const line = /^.*\{ "contract", Contract\.contract, .*\n/m;
  assert.match(library, line, 'the library registers contract');
  return library.replace(line, '').split(hash).join('f'.repeat(hash.length));
}

test('contract() is the library\'s answer, and the document docs/lua-protocol.md shows', async () => {
  const pl = fx.client();
  const c = await pl.contract();
  const raw = await fx.redis.call('FCALL_RO', parseLibrary(library).prefix + 'contract', '0');
  assert.deepEqual(c, JSON.parse(raw[1]));
  assert.deepEqual(c, documentedContract());
  assert.equal(c.protocol, '4.6');
  assert.deepEqual(Object.keys(c.waiting), ['recheck_ms', 'max_reservation_ms', 'wake_margin_ms']); // 4.4: what the wait loop uses
  assert.deepEqual(await pl.rolesOf('move_folder'), ['src', 'dst']);
  assert.equal(await pl.rolesOf('no_such_op'), undefined);
});

test('a client given only the prefix knows the roles and limits from the contract', async () => {
  await fx.client().load();
  const byPrefix = new PathLock({ redis: fx.redis, namespace: 'ct-prefix', functionPrefix: parseLibrary(library).prefix });
  fx.onClose(() => byPrefix.close());
  const g = await byPrefix.acquire({ owner: 'a', op: 'move_folder', targets: { src: '/s', dst: '/d' } });
  assert.equal(await byPrefix.release(g.id, g.token), true);
  const limit = (await byPrefix.contract()).limits.owner_bytes;
  await assert.rejects(
    byPrefix.acquire({ owner: 'x'.repeat(limit + 1), op: 'upload', paths: ['/u'] }),
    (e) => e instanceof InvalidRequestError && e.message.includes(`the limit is ${limit}`),
  );
  await assert.rejects(byPrefix.acquire({ owner: 'a', op: 'no_such_op', targets: { target: '/u' } }), InvalidRequestError);
});

test('a library older than protocol 4.2 (no contract) is refused with an error naming the protocol', async () => {
  const older = new PathLock({ redis: fx.redis, namespace: 'ct-older', library: olderLibrary() });
  fx.onClose(() => older.close());
  const named = (e) => e instanceof BackendError && /older than protocol 4\.2/.test(e.message);
  await assert.rejects(older.contract(), named);
  await assert.rejects(older.acquire({ owner: 'a', op: 'upload', paths: ['/u'] }), named);
  // the client loaded it (it was missing), so the refusal is about the library, not the server
  const list = await fx.redis.call('FUNCTION', 'LIST', 'LIBRARYNAME', (await older.library()).name);
  assert.equal(list.length, 1);
});

test('a client whose library is missing and whose text is unknown says so', async () => {
  const fresh = new PathLock({ redis: fx.redis, namespace: 'ct-missing', functionPrefix: 'pl_v4_0123456789abcdef_' });
  fx.onClose(() => fresh.close());
  await assert.rejects(fresh.contract(), (e) => e instanceof BackendError && /is not loaded/.test(e.message));
});
