// A real redis-server on a free loopback port for the tests, and the
// library they load (env PATHLOCK_LIBRARY).
'use strict';
const { spawn } = require('node:child_process');
const net = require('node:net');
const fs = require('node:fs');
const os = require('node:os');
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

/** A loopback port that was free a moment ago (the OS's choice). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The highest port a Redis Cluster node may listen on: its cluster bus
 * listens on port + 10000 (no --cluster-port is given), which must be a
 * port too; redis-server refuses to start above it.
 */
const CLUSTER_PORT_MAX = 65535 - 10000;

/** freePort for a Redis Cluster node: drawn again while the OS gives one above CLUSTER_PORT_MAX. */
async function freeClusterPort() {
  for (;;) {
    const port = await freePort();
    if (port <= CLUSTER_PORT_MAX) return port;
  }
}

/** Whether redis-server arguments make a Cluster node (--cluster-enabled yes). */
function clusterNode(args) {
  const i = args.indexOf('--cluster-enabled');
  return i >= 0 && args[i + 1] === 'yes';
}

/**
 * Starts redis-server on a free port in a fresh directory (freeClusterPort's
 * when options.args enable Cluster mode), on another one when it exits
 * before it is ready (a parallel test took the port meanwhile). options.args:
 * more arguments; options.conf(dir, port): the text of a configuration file
 * given first (a sentinel's); options.tlsArgs: TLS arguments, with a TLS
 * port drawn on each try (`--tls-port`; the result's tlsPort).
 */
async function startRedis(options = {}) {
  const bin = process.env.REDIS_SERVER ?? 'redis-server';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pathlock-node-redis-'));
  const extra = options.args ?? [];
  for (let tries = 0; ; tries++) {
    const port = clusterNode(extra) ? await freeClusterPort() : await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    if (options.conf) {
      const conf = path.join(dir, 'redis.conf');
      fs.writeFileSync(conf, options.conf(dir, port));
      args.unshift(conf);
    }
    const tlsPort = options.tlsArgs ? await freePort() : undefined;
    if (options.tlsArgs) args.push('--tls-port', String(tlsPort), ...options.tlsArgs);
    const proc = spawn(bin, [...args, ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    const ok = await new Promise((resolve) => {
      let settled = false;
      proc.once('exit', () => {
        settled = true;
        resolve(false);
      });
      const check = () => {
        if (settled) return;
        // A sentinel never says "Ready": it has listened by its +monitor.
        if (out.includes('Ready to accept connections') || out.includes('+monitor master')) resolve(true);
        else setTimeout(check, 20);
      };
      check();
    });
    if (ok) {
      const url = `redis://127.0.0.1:${port}`;
      return {
        url,
        port,
        tlsPort,
        proc,
        async stop() {
          proc.kill('SIGTERM');
          await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    if (tries > 5) throw new Error(`redis-server did not start: ${out}`);
  }
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

module.exports = { freePort, freeClusterPort, CLUSTER_PORT_MAX, startRedis, connect, freshNamespace, until, library, libraryFile, serverFixture };
