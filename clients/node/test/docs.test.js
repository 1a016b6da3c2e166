'use strict';
// docs/node.md's example, run as written: its ```ts block is compiled with
// the TypeScript transpiler and run against a test server.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');
const { startRedis } = require('./support/server');

let server;
before(async () => (server = await startRedis()));
after(async () => server.stop());

test('the example of docs/node.md runs', async () => {
  const doc = fs.readFileSync(path.join(__dirname, '..', '..', '..', 'docs', 'node.md'), 'utf8');
  const blocks = [...doc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 1, 'docs/node.md has one ```ts example');
  const out = ts.transpileModule(blocks[0], {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, esModuleInterop: true },
    reportDiagnostics: true,
  });
  assert.deepEqual(out.diagnostics, []);
  const mod = { exports: {} };
  const req = (name) => (name === 'pathlock' ? require('../dist/cjs/index.js') : require(name));
  const logged = [];
  const con = { log: (s) => logged.push(s), error: (s) => logged.push(s) };
  new Function('require', 'module', 'exports', 'console', out.outputText)(req, mod, mod.exports, con);
  await mod.exports.main(server.url);
  assert.deepEqual(logged.map((s) => s.replace(/\d+/g, 'N')), [
    "refused by alice's move_folder (held_ancestor)",
    'moving with fence N',
    'dave gave up: AbortError',
  ]);
});
