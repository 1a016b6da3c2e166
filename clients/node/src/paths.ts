// Canonical lock paths, exactly as pathlock::normalize_path makes them
// (docs/design.md#paths): absolute, single '/' separators, no trailing '/',
// no '.' or '..' component, no control characters, well-formed UTF-8,
// components of at most 255 bytes, paths of at most 4096 bytes.
import { InvalidRequestError } from './errors';

export const MAX_PATH_BYTES = 4096;
export const MAX_COMPONENT_BYTES = 255;

// Length of the well-formed UTF-8 sequence at b[i], or 0.
function utf8Length(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c < 0x80) return 1;
  let n = 0;
  let lo = 0x80;
  let hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c === 0xe0) lo = 0xa0; // overlong
    if (c === 0xed) hi = 0x9f; // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c === 0xf0) lo = 0x90; // overlong
    if (c === 0xf4) hi = 0x8f; // above U+10FFFF
  } else return 0;
  if (i + n > b.length) return 0;
  if (b[i + 1] < lo || b[i + 1] > hi) return 0;
  for (let k = 2; k < n; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return 0;
  return n;
}

/** The reason `bytes` is not acceptable text (a control character, invalid UTF-8), or null. */
export function textProblem(bytes: Uint8Array): string | null {
  for (let i = 0; i < bytes.length; ) {
    const c = bytes[i];
    if (c < 0x20 || c === 0x7f) return `control character 0x${c.toString(16).toUpperCase().padStart(2, '0')} at byte ${i}`;
    const n = utf8Length(bytes, i);
    if (n === 0) return `invalid UTF-8 at byte ${i}`;
    i += n;
  }
  return null;
}

function toBytes(path: string | Uint8Array): Uint8Array {
  if (typeof path !== 'string') return path;
  // A lone UTF-16 surrogate has no UTF-8 form: refuse it instead of letting
  // the encoder replace it with U+FFFD.
  if (!(path as unknown as { isWellFormed(): boolean }).isWellFormed()) throw new InvalidRequestError('path has invalid UTF-8 (a lone surrogate)');
  return Buffer.from(path, 'utf8');
}

/**
 * The canonical form of `path` (a string, or raw bytes such as a line read
 * from a pipe). Throws InvalidRequestError for a path the engine refuses.
 */
export function normalizePath(path: string | Uint8Array): string {
  const b = toBytes(path);
  if (b.length === 0) throw new InvalidRequestError('path is empty');
  if (b[0] !== 0x2f) throw new InvalidRequestError(`path '${Buffer.from(b).toString()}' is not absolute (must start with '/')`);
  if (b.length > MAX_PATH_BYTES)
    throw new InvalidRequestError(`path is ${b.length} bytes long; the limit is ${MAX_PATH_BYTES}`);
  const problem = textProblem(b);
  if (problem) throw new InvalidRequestError(`path has ${problem}`);
  const parts: string[] = [];
  const text = Buffer.from(b).toString('utf8');
  for (const component of text.split('/')) {
    if (component === '') continue;
    if (component === '.' || component === '..')
      throw new InvalidRequestError(`path '${text}' has a '${component}' component; give the resolved path`);
    const size = Buffer.byteLength(component, 'utf8');
    if (size > MAX_COMPONENT_BYTES)
      throw new InvalidRequestError(`path component of ${size} bytes; the limit is ${MAX_COMPONENT_BYTES}`);
    parts.push(component);
  }
  return '/' + parts.join('/');
}

/** Is canonical `inner` equal to or inside canonical `outer`? */
export function pathWithin(inner: string, outer: string): boolean {
  if (outer === '/') return true;
  if (!inner.startsWith(outer)) return false;
  return inner.length === outer.length || inner[outer.length] === '/';
}

/** Do two canonical paths overlap (equal, or one inside the other)? */
export function pathsOverlap(a: string, b: string): boolean {
  return pathWithin(a, b) || pathWithin(b, a);
}
