'use strict';
// Issue 48: the keys, the acquire arguments and the waiting numbers come
// from the library's contract. The driver's `protocol` command answers what
// the client's own acquire code builds (compared here with values derived
// from the contract alone, as clients/kit/test_protocol.py does), and what
// a real acquire sends on the wire (MONITOR) has every optional group.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { freshNamespace, until, libraryFile, serverFixture, connect } = require('./support/server');
const { lineProcess } = require('./support/lines');
const { reserveMs, waitingOf, RECHECK_MS, MAX_RESERVATION_MS } = require('../dist/cjs/waiting.js');

const fx = serverFixture('p');
const DRIVER = path.join(__dirname, '..', 'bin', 'pathlock-node-shell');

// What the kit expects of `protocol`, from the contract only.
function expected(contract, ns, op, paths, waitMs, fair) {
  const keys = contract.keys.suffixes.map((s) => contract.keys.pattern.replace('{NS}', `{${ns}}`).replace('<suffix>', s));
  const w = contract.waiting ?? { recheck_ms: 200, max_reservation_ms: 2000, wake_margin_ms: 1 };
  const inLine = waitMs > 0 && fair;
  const values = {
    owner: 'kit-owner', op, ttl_ms: '1000', new_id: 'kit-id', new_token: 'kit-token', reenter_id: '', reenter_token: '',
    idempotency_key: '', fair: fair ? '1' : '0', waiter_id: inLine ? 'kit-waiter' : '',
    reserve_ms: String(inLine ? Math.min(waitMs + w.recheck_ms, w.max_reservation_ms) : 0), deadline_ms: '', default_limits: '',
  };
  const entry = contract.functions.find((f) => f.name === 'acquire');
  const args = [];
  for (const name of [...entry.args, ...entry.optional.flat()]) {
    if (name === 'path...') args.push(...paths);
    else args.push(values[name]);
  }
  const reserve = {};
  for (const left of [1, 150, 1799, 1800, 1801, 2500, 60000]) reserve[left] = Math.min(left + w.recheck_ms, w.max_reservation_ms);
  return { keys, acquire_args: args, reserve_ms: reserve };
}

test('driver: protocol answers the keys, the first acquire arguments and reserve_ms from the contract', async () => {
  const ns = freshNamespace('p');
  const contract = await fx.client(ns).contract();
  const d = lineProcess(process.execPath, [DRIVER, '--redis', fx.server.url, '--namespace', ns], { ...process.env, PATHLOCK_LIBRARY: libraryFile });
  fx.onClose(() => d.end());
  assert.ok((await d.ask('hello')).features.includes('protocol'));
  const cases = [
    ['upload', ['/p/a'], 0, true],
    ['upload', ['/p/a'], 150, true],
    ['move_folder', ['/p/A', '/p/B'], 60000, true],
    ['upload', ['/p/a'], 5000, false],
  ];
  for (const [op, paths, wait, fair] of cases) {
    const answer = await d.ask(`protocol ${op} ${paths.join(' ')} wait=${wait} fair=${fair ? 1 : 0}`);
    assert.deepEqual(answer, expected(contract, ns, op, paths, wait, fair), `${op} wait=${wait} fair=${fair}`);
  }
  assert.deepEqual((await d.ask('protocol upload "/p/q r"')).acquire_args.slice(8, 9), ['/p/q r']); // quoted paths, wait 0
  for (const bad of ['protocol', 'protocol upload', 'protocol nope /x', 'protocol upload /a /b', 'protocol upload /a fair=2', 'protocol upload /a wait=-1', 'protocol upload rel'])
    assert.ok('error' in (await d.ask(bad)), bad);
});

test('reserveMs: min(ceil(left) + recheck, max); 0 at the deadline and out of line; the pre-4.4 fallback', async () => {
  const w = { recheck_ms: 200, max_reservation_ms: 2000, wake_margin_ms: 1 };
  assert.equal(reserveMs(1, true, w), 201);
  assert.equal(reserveMs(0.2, true, w), 201); // rounded up
  assert.equal(reserveMs(1799, true, w), 1999);
  assert.equal(reserveMs(1800, true, w), 2000);
  assert.equal(reserveMs(60000, true, w), 2000);
  assert.equal(reserveMs(0, true, w), 0);
  assert.equal(reserveMs(-5, true, w), 0);
  assert.equal(reserveMs(500, false, w), 0);
  assert.equal(reserveMs(100, true, { recheck_ms: 50, max_reservation_ms: 120, wake_margin_ms: 1 }), 120);
  const contract = await fx.client().contract();
  const fallback = { recheck_ms: RECHECK_MS, max_reservation_ms: MAX_RESERVATION_MS, wake_margin_ms: 1 };
  assert.deepEqual(waitingOf(contract), contract.waiting ?? fallback);
  assert.deepEqual(waitingOf({ ...contract, waiting: undefined }), fallback);
});

test('every acquire sends every optional group (a reentry too), reserve_ms and deadline_ms by name', async () => {
  const ns = freshNamespace('p');
  const pl = fx.client(ns);
  const contract = await pl.contract();
  const entry = contract.functions.find((f) => f.name === 'acquire');
  const names = [...entry.args, ...entry.optional.flat()];
  const at = (name, n) => names.indexOf(name) + (names.indexOf(name) > names.indexOf('path...') ? n - 1 : 0);
  const monitor = connect(fx.server.url);
  fx.onClose(() => monitor.disconnect());
  const seen = [];
  let ended = false; // MONITOR saw the ECHO sent after the acquires: it saw them all
  await new Promise((resolve, reject) =>
    monitor.monitor((e, m) => {
      if (e) return reject(e);
      m.on('monitor', (_time, args) => {
        if (String(args[0]).toUpperCase() === 'ECHO' && args[1] === 'protocol-test-end') ended = true;
        if (String(args[0]).toUpperCase() === 'FCALL' && String(args[1]).endsWith('_acquire')) seen.push(args.slice(3 + Number(args[2])));
      });
      fx.onClose(() => m.disconnect());
      resolve();
    }),
  );
  const g = await pl.acquire({ owner: 'a', op: 'upload', paths: ['/m/x'] });
  await pl.acquire({ owner: 'a', op: 'upload', paths: ['/m/x'], reenter: { id: g.id, token: g.token } });
  const r = await pl.tryAcquire({ owner: 'b', op: 'delete_folder', paths: ['/m'], waitMs: 150, timeoutMs: 5000 });
  assert.equal(r.conflict.id, g.id);
  await fx.redis.call('ECHO', 'protocol-test-end');
  await until(() => ended, 'the acquires seen by MONITOR');
  assert.ok(seen.length >= 4, JSON.stringify(seen));
  for (const args of seen) assert.equal(args.length, names.length, JSON.stringify(args)); // one path each
  assert.equal(seen[1][at('reenter_id', 1)], g.id);
  assert.equal(seen[1][at('reserve_ms', 1)], '0');
  assert.equal(seen[1][at('deadline_ms', 1)], '');
  const waiting = seen[2];
  assert.match(waiting[at('waiter_id', 1)], /^w[0-9a-f]+$/);
  const first = Number(waiting[at('reserve_ms', 1)]); // 150 ms left, less the ms that passed since the call began
  const most = Math.min(150 + waitingOf(contract).recheck_ms, waitingOf(contract).max_reservation_ms);
  assert.ok(first <= most && first > most - 50, `reserve_ms ${first}, at most ${most}`);
  assert.match(waiting[at('deadline_ms', 1)], /^\d+$/); // timeoutMs: the server's clock
  assert.equal(seen.at(-1)[at('reserve_ms', 1)], '0'); // the attempt at the deadline
});
