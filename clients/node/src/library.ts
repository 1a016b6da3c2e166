// The Functions library: its name, its function prefix and, when its text is
// known, the operations of its matrix (read from the data chunk the library
// starts with: `PL_OPS = { ["op"] = { first = N, roles = { "r", ... }, ... } }`).
import { InvalidRequestError } from './errors';

/** What a client knows of the library it calls. */
export interface LibraryInfo {
  /** `pathlock_v4_<H>`. */
  name: string;
  /** `pl_v4_<H>_`: every function is this prefix and its name. */
  prefix: string;
  /** The library text, when known (needed to load it). */
  text?: string;
  /** Operation name -> its roles in order, when the text is known. */
  ops?: Map<string, string[]>;
  matrixName?: string;
  matrixVersion?: string;
  fingerprint?: string;
}

// A Lua string literal as the library builder writes it: "..." with \" \\
// and \ddd escapes.
function luaString(literal: string): string {
  const body = literal.slice(1, -1);
  const bytes: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch === '\\') {
      const m = /^\d{1,3}/.exec(body.slice(i + 1));
      if (m) {
        bytes.push(Number(m[0]));
        i += m[0].length;
      } else {
        bytes.push(body.charCodeAt(i + 1));
        i += 1;
      }
    } else {
      for (const b of Buffer.from(ch, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

const LITERAL = '"(?:[^"\\\\]|\\\\.)*"';

/** Reads a library text: its name, prefix, matrix and operations. */
export function parseLibrary(text: string): LibraryInfo {
  const first = /^#!lua name=(pathlock_v(\d+)_([0-9a-f]+))\s*\n/.exec(text);
  if (!first) throw new InvalidRequestError("not a pathlock library: its first line must be '#!lua name=pathlock_v<N>_<H>'");
  const name = first[1];
  const prefixMatch = /local PL_FUNCTION_PREFIX = "([^"]*)"/.exec(text);
  const prefix = prefixMatch ? prefixMatch[1] : `pl_v${first[2]}_${first[3]}_`;
  const info: LibraryInfo = { name, prefix, text, ops: new Map() };
  const constant = (n: string) => {
    const m = new RegExp(`local ${n} = (${LITERAL})`).exec(text);
    return m ? luaString(m[1]) : undefined;
  };
  info.matrixName = constant('PL_MATRIX_NAME');
  info.matrixVersion = constant('PL_MATRIX_VERSION');
  info.fingerprint = constant('PL_FINGERPRINT');
  const start = text.indexOf('local PL_OPS = {\n');
  if (start >= 0) {
    const end = text.indexOf('\n}', start);
    const block = text.slice(start, end);
    const opLine = new RegExp(`^\\s*\\[(${LITERAL})\\] = \\{ first = \\d+, roles = \\{ ((?:${LITERAL}(?:, )?)*) \\}`, 'gm');
    for (let m; (m = opLine.exec(block)); ) {
      const roles = m[2].match(new RegExp(LITERAL, 'g')) ?? [];
      info.ops!.set(luaString(m[1]), roles.map(luaString));
    }
  }
  if (info.ops!.size === 0) info.ops = undefined;
  return info;
}

/** The prefix of a library name: `pathlock_v4_<H>` -> `pl_v4_<H>_`. */
export function prefixOfName(name: string): string {
  const m = /^pathlock_(v\d+_[0-9a-f]+)$/.exec(name);
  if (!m) throw new InvalidRequestError(`'${name}' is not a pathlock library name`);
  return `pl_${m[1]}_`;
}
