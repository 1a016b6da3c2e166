'use strict';
// The shared path vectors (tests/vectors/paths.json, installed as
// share/pathlock/test-vectors/paths.json; PATHLOCK_VECTORS_DIR overrides).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { normalizePath, InvalidRequestError, pathsOverlap } = require('../dist/cjs/index.js');

const dir = process.env.PATHLOCK_VECTORS_DIR ?? path.join(__dirname, '..', '..', '..', 'tests', 'vectors');
const vectors = JSON.parse(fs.readFileSync(path.join(dir, 'paths.json'), 'utf8'));

test('paths.json: canonical forms', () => {
  assert.ok(vectors.normalize.length > 0);
  for (const v of vectors.normalize) {
    assert.equal(normalizePath(Buffer.from(v.input_hex, 'hex')), v.canonical, v.input);
    if (v.input !== undefined) assert.equal(normalizePath(v.input), v.canonical, v.input);
  }
});

test('paths.json: refused paths', () => {
  assert.ok(vectors.invalid.length > 0);
  for (const v of vectors.invalid)
    assert.throws(() => normalizePath(Buffer.from(v.input_hex, 'hex')), InvalidRequestError, v.reason);
  assert.throws(() => normalizePath('/a/\ud800'), InvalidRequestError);
});

test('overlap is by whole components', () => {
  assert.ok(pathsOverlap('/p/A', '/p/A/C'));
  assert.ok(pathsOverlap('/', '/x'));
  assert.ok(!pathsOverlap('/p/A', '/p/AB'));
});
