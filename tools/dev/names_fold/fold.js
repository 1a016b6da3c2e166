// The Node side of the test that every client folds names alike
// (tests/names_agree.py): the name policies of docs/design.md#names with
// String.prototype.normalize (Node's ICU) and, as JavaScript has no case
// folding, the full case folding of CaseFolding.txt (statuses C and F).
// Usage: node fold.js POLICY ASSIGNED_INC CASEFOLDING_TXT < names; prints, a
// line each, "=" and the folded name, or "!" and why it cannot be folded.
// A developer's tool: the Node client is to fold the same way, by a table.
'use strict';
const fs = require('fs');

function readAssigned(path) {
  const ranges = [];
  for (const m of fs.readFileSync(path, 'utf8').matchAll(/\{0x([0-9A-F]+), 0x([0-9A-F]+)\}/g)) {
    ranges.push([parseInt(m[1], 16), parseInt(m[2], 16)]);
  }
  return ranges;
}

function assigned(ranges, cp) {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < ranges[mid][0]) hi = mid - 1;
    else if (cp > ranges[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

// code point -> its full folding (a string), from CaseFolding.txt's C and F lines.
function readFolding(path) {
  const folding = new Map();
  for (const line of fs.readFileSync(path, 'utf8').split('\n')) {
    const f = line.split('#')[0].split(';').map((s) => s.trim());
    if (f.length < 3 || (f[1] !== 'C' && f[1] !== 'F')) continue;
    folding.set(parseInt(f[0], 16), String.fromCodePoint(...f[2].split(' ').map((h) => parseInt(h, 16))));
  }
  return folding;
}

// The code points of a UTF-8 line, or the byte offset of its first malformed
// sequence (overlong, surrogate, above U+10FFFF, truncated).
function decode(bytes) {
  const cps = [];
  for (let at = 0; at < bytes.length;) {
    const b = bytes[at];
    const n = b < 0x80 ? 1 : b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    if (n === 0 || at + n > bytes.length) return { bad: at };
    let cp = n === 1 ? b : b & (0xff >> (n + 1));
    for (let k = 1; k < n; k++) {
      if ((bytes[at + k] & 0xc0) !== 0x80) return { bad: at };
      cp = (cp << 6) | (bytes[at + k] & 0x3f);
    }
    const min = [0, 0, 0x80, 0x800, 0x10000][n];
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return { bad: at };
    cps.push(cp);
    at += n;
  }
  return { cps };
}

function fold(policy, ranges, folding, bytes) {
  const { cps, bad } = decode(bytes);
  if (bad !== undefined) return `!is not valid UTF-8 (at byte ${bad})`;
  for (const cp of cps) {
    if (!assigned(ranges, cp)) {
      const hex = cp.toString(16).toUpperCase().padStart(4, '0');
      return `!holds U+${hex}, which is not assigned in Unicode 13.0: not every client can fold it`;
    }
  }
  const name = String.fromCodePoint(...cps);
  if (policy === 'nfc') return '=' + name.normalize('NFC');
  let folded = '';
  for (const ch of name.normalize('NFD')) folded += folding.get(ch.codePointAt(0)) ?? ch;
  return '=' + folded.normalize('NFC');
}

function main() {
  const [policy, assignedInc, caseFolding] = process.argv.slice(2);
  if ((policy !== 'nfc' && policy !== 'nfc_casefold') || !caseFolding) {
    process.stderr.write('usage: node fold.js nfc|nfc_casefold ASSIGNED_INC CASEFOLDING_TXT < names\n');
    process.exit(2);
  }
  const ranges = readAssigned(assignedInc);
  const folding = readFolding(caseFolding);
  const input = fs.readFileSync(0);
  const out = [];
  for (let at = 0; at < input.length;) {
    const end = input.indexOf(0x0a, at);
    if (end < 0) break;
    out.push(Buffer.from(fold(policy, ranges, folding, input.subarray(at, end)) + '\n', 'utf8'));
    at = end + 1;
  }
  process.stdout.write(Buffer.concat(out));
}

main();
