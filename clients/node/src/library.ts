// The Functions library: its name and function prefix (from its first line,
// Redis's own `#!lua name=` header), and what it says about itself through
// its read-only function `contract` (protocol 4.2,
// docs/lua-protocol.md#contract-read-only). The client never reads the
// library's Lua text for anything else.
import { BackendError, InvalidRequestError } from './errors';
import type { WaitingNumbers } from './waiting';

/** What a client knows of the library it calls. */
export interface LibraryInfo {
  /** `pathlock_v4_<H>`. */
  name: string;
  /** `pl_v4_<H>_`: every function is this prefix and its name. */
  prefix: string;
  /** The library text, when known (needed to load it). */
  text?: string;
}

/** The limits of a library's contract (the C++ constants its functions enforce). */
export interface ContractLimits {
  ttl_ms: number;
  reserve_ms: number;
  owner_bytes: number;
  id_chars: number;
  token_bytes: number;
  idempotency_key_chars: number;
  namespace_bytes: number;
  list_limit: number;
  blockers_limit: number;
  waiters_limit: number;
  [name: string]: number;
}

/** The library's answer to `FCALL_RO <prefix>contract 0` (docs/lua-protocol.md#contract-read-only). */
export interface Contract {
  /** `major.minor`, e.g. `4.2`. */
  protocol: string;
  layout: number;
  matrix: { name: string; version: string; fingerprint: string };
  keys: { pattern: string; suffixes: string[] };
  operations: { name: string; roles: string[] }[];
  relations: string[];
  limits: ContractLimits;
  functions: { name: string; keys: number; args: string[]; optional: string[][]; flags: string[]; replies: string[] }[];
  replies: Record<string, unknown>;
  errors: { prefix: string; changed: string; retry: string }[];
  /** The waiting policy's numbers (protocol 4.4; src/waiting.ts falls back for an older library). */
  waiting?: WaitingNumbers;
}

/** Reads the JSON a library's `contract` answers; BackendError when it lacks what a client needs. */
export function parseContract(json: string): Contract {
  let c: Contract;
  try {
    c = JSON.parse(json) as Contract;
  } catch (e) {
    throw new BackendError(`the library's contract is not JSON: ${(e as Error).message}`, { cause: e });
  }
  if (typeof c?.protocol !== 'string' || !Array.isArray(c.operations) || typeof c.limits !== 'object' || !Array.isArray(c.keys?.suffixes))
    throw new BackendError("the library's contract lacks protocol, operations, limits or keys");
  const w = c.waiting as unknown as Record<string, unknown> | undefined;
  if (w !== undefined && ['recheck_ms', 'max_reservation_ms', 'wake_margin_ms'].some((k) => !Number.isSafeInteger(w?.[k]) || (w[k] as number) < 0))
    throw new BackendError(`the library's contract has waiting numbers this client cannot read: ${JSON.stringify(w)}`);
  return c;
}

/** The roles of `op` in role order, undefined for an operation the contract does not name. */
export function rolesIn(contract: Contract, op: string): string[] | undefined {
  return contract.operations.find((o) => o.name === op)?.roles;
}

/** Is the contract's protocol `version` (`major.minor`) or later? */
export function protocolAtLeast(contract: Contract, version: string): boolean {
  const [a, b] = contract.protocol.split('.').map(Number);
  const [x, y] = version.split('.').map(Number);
  return a > x || (a === x && (b ?? 0) >= (y ?? 0));
}

/** Reads a library text's first line: its name and function prefix. */
export function parseLibrary(text: string): LibraryInfo {
  const first = /^#!lua name=(pathlock_v\d+_[0-9a-f]+)\s*\n/.exec(text);
  if (!first) throw new InvalidRequestError("not a pathlock library: its first line must be '#!lua name=pathlock_v<N>_<H>'");
  return { name: first[1], prefix: prefixOfName(first[1]), text };
}

/** The prefix of a library name: `pathlock_v4_<H>` -> `pl_v4_<H>_`. */
export function prefixOfName(name: string): string {
  const m = /^pathlock_(v\d+_[0-9a-f]+)$/.exec(name);
  if (!m) throw new InvalidRequestError(`'${name}' is not a pathlock library name`);
  return `pl_${m[1]}_`;
}
