// Real servers for the tests, from the one test launcher
// (tests/support/pathlock-testenv), and the library they load (env PATHLOCK_LIBRARY).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const Redis = require('ioredis');

const libraryFile = process.env.PATHLOCK_LIBRARY;
if (!libraryFile || !fs.existsSync(libraryFile)) {
  throw new Error(
    'PATHLOCK_LIBRARY must name the pathlock Functions library file ' +
      '(e.g. build/pathlock_matrix/pathlock_cloud_drive/redis/pathlock_library.lua); ' +
      (libraryFile ? `'${libraryFile}' does not exist` : 'it is not set'),
  );
}
const library = fs.readFileSync(libraryFile, 'utf8');

/**
 * The highest port a Redis Cluster node may listen on: its cluster bus
 * listens on port + 10000 (no --cluster-port is given), which must be a
 * port too; redis-server refuses to start above it. The launcher keeps
 * Cluster and Sentinel ports at or below it.
 */
const CLUSTER_PORT_MAX = 65535 - 10000;

/** The one test launcher (tests/README.md): $PATHLOCK_TESTENV, else this source tree's. */
const TESTENV = process.env.PATHLOCK_TESTENV ?? path.join(__dirname, '..', '..', '..', '..', 'tests', 'support', 'pathlock-testenv');

/**
 * Starts the launcher: `pathlock-testenv KIND ...options -- ...args`
 * ('redis', 'cluster', 'sentinel'), which picks free ports, starts the
 * servers, waits until they answer and prints one JSON line. Resolves to
 * { info (that line: ports, pids, url, dirs), url, port, command(line)
 * (a stdin command such as `restart NAME`, resolved to its JSON answer),
 * stop() (closes its stdin: it stops every server and removes their dirs) }.
 * Its error, when it cannot start them, is on stderr (inherited).
 */
async function startTestenv(kind, options = [], args = []) {
  const proc = spawn(TESTENV, [kind, ...options, '--', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  const waiting = [];
  let buffer = '';
  const push = (line) => (waiting.length ? waiting.shift()(line) : lines.push(line));
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (d) => {
    buffer += d;
    for (let nl; (nl = buffer.indexOf('\n')) >= 0; buffer = buffer.slice(nl + 1)) push(buffer.slice(0, nl));
  });
  const exited = new Promise((r) => proc.once('exit', (code) => r(code)));
  exited.then((code) => { while (waiting.length) waiting.shift()(null); lines.push(null); return code; });
  const next = () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiting.push(r)));
  const first = await next();
  if (first === null) throw new Error(`pathlock-testenv ${kind} did not start its servers (exit ${await exited}; see stderr)`);
  const info = JSON.parse(first);
  return {
    info,
    url: info.url,
    port: info.port,
    async command(line) {
      proc.stdin.write(`${line}\n`);
      const answer = await next();
      const parsed = answer === null ? { error: 'the launcher ended' } : JSON.parse(answer);
      if (parsed.error) throw new Error(`pathlock-testenv: ${line}: ${parsed.error}`);
      return parsed;
    },
    async stop() {
      proc.stdin.end();
      await exited;
    },
  };
}

/**
 * A redis-server from the launcher (`pathlock-testenv redis`): options.args
 * are more redis-server arguments; options.tlsDir (make_test_certs.sh's
 * files) adds a TLS port asking for client certificates (the result's
 * tlsPort) beside the plain one.
 */
async function startRedis(options = {}) {
  const env = await startTestenv('redis', options.tlsDir ? ['--tls-dir', options.tlsDir] : [], options.args ?? []);
  return { ...env, pid: env.info.pid, tlsPort: env.info.servers[0].tls_port };
}

/** An ioredis connection as the client requires it. */
function connect(url) {
  return new Redis(url, { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 });
}

let counter = 0;
/** A fresh namespace per test. */
function freshNamespace(prefix = 't') {
  return `${prefix}-${process.pid}-${++counter}-${Date.now()}`;
}

/**
 * Waits until `cond()` is true (a sync point on observable state, not a
 * sleep). `what` names the condition; a function's (async) result is put in
 * the error instead, to show the state that did not come.
 */
async function until(cond, what = 'condition', timeoutMs = 20000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof what === 'function' ? await what() : what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * One redis-server for a test file's tests: started before them, stopped
 * after them once every client and closer it was given has closed.
 * `fx.server` and `fx.redis` (a connection as the client requires it) are set
 * before the first test; `fx.client(ns)` opens a PathLock on that connection;
 * `fx.onClose(fn)` adds a closer.
 */
function serverFixture(prefix = 't') {
  const { before, after } = require('node:test');
  const { PathLock } = require('../../dist/cjs/index.js');
  const closers = [];
  const fx = {
    server: undefined,
    redis: undefined,
    onClose: (fn) => closers.push(fn),
    client(ns = freshNamespace(prefix)) {
      const c = new PathLock({ redis: fx.redis, namespace: ns, library });
      closers.push(() => c.close());
      return c;
    },
  };
  before(async () => {
    fx.server = await startRedis();
    fx.redis = connect(fx.server.url);
  });
  after(async () => {
    for (const close of closers) await close();
    fx.redis.disconnect();
    await fx.server.stop();
  });
  return fx;
}

module.exports = { CLUSTER_PORT_MAX, startTestenv, startRedis, connect, freshNamespace, until, library, libraryFile, serverFixture };
