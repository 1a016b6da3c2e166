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
 * Starts redis-server on a free port in a fresh directory. options.args:
 * more arguments; options.conf(dir, port): the text of a configuration file
 * given first (a sentinel's).
 */
async function startRedis(options = {}) {
  const bin = process.env.REDIS_SERVER ?? 'redis-server';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pathlock-node-redis-'));
  for (let tries = 0; ; tries++) {
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    if (options.conf) {
      const conf = path.join(dir, 'redis.conf');
      fs.writeFileSync(conf, options.conf(dir, port));
      args.unshift(conf);
    }
    const proc = spawn(bin, [...args, ...(options.args ?? [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    const ok = await new Promise((resolve) => {
      proc.once('exit', () => resolve(false));
      const check = () => {
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

module.exports = { freePort, startRedis, connect, freshNamespace, until, library, libraryFile, serverFixture };
