// Validation of input: what the client checks before it sends anything
// (an InvalidRequestError, nothing sent), by the engine's rules
// (src/core/request.cpp) and the loaded library's contract limits.
import { InvalidRequestError } from './errors';
import { Contract, ContractLimits, rolesIn } from './library';
import { normalizePath, textProblem } from './paths';
import type { AcquireOptions, ConvertOptions } from './types';

/**
 * MAX_TTL_MS and MAX_OWNER_BYTES are protocol 4.2's values, for reference:
 * the client checks input against the loaded library's contract
 * (`contract().limits`).
 */
export const MAX_TTL_MS = 604_800_000;
export const DEFAULT_TTL_MS = 30_000;
export const MAX_OWNER_BYTES = 256;

const NAMESPACE_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const KEY_RE = /^[A-Za-z0-9._:-]+$/;

export function checkNamespace(namespace: unknown): string {
  if (typeof namespace !== 'string' || !NAMESPACE_RE.test(namespace))
    throw new InvalidRequestError(`namespace must be 1..128 bytes of [A-Za-z0-9._:-], got '${namespace}'`);
  return namespace;
}

export function checkFunctionPrefix(prefix: string): string {
  if (!/^pl_v\d+_[0-9a-f]+_$/.test(prefix)) throw new InvalidRequestError(`'${prefix}' is not a function prefix (pl_v4_<H>_)`);
  return prefix;
}

/** `v` as sent (decimal), when it is a whole number from lo to hi. */
export function wholeMs(what: string, v: number, lo: number, hi: number): string {
  if (!Number.isSafeInteger(v) || v < lo || v > hi)
    throw new InvalidRequestError(`${what} must be a whole number of ms from ${lo} to ${hi}, got ${v}`);
  return String(v);
}

/**
 * The engine's rules for an owner (src/core/request.cpp): 1..256 bytes of
 * well-formed UTF-8 without control characters (below 0x20, and 0x7F).
 */
export function checkOwner(owner: unknown, maxBytes = MAX_OWNER_BYTES): void {
  if (typeof owner !== 'string') throw new InvalidRequestError('owner must be a string');
  if (owner === '') throw new InvalidRequestError('owner is empty');
  if (!(owner as unknown as { isWellFormed(): boolean }).isWellFormed())
    throw new InvalidRequestError('owner has invalid UTF-8 (a lone surrogate)');
  const bytes = Buffer.from(owner, 'utf8');
  if (bytes.length > maxBytes) throw new InvalidRequestError(`owner is ${bytes.length} bytes; the limit is ${maxBytes}`);
  const problem = textProblem(bytes);
  if (problem) throw new InvalidRequestError(`owner has ${problem}`);
}

/** A request's TTL (as sent) and wait, checked without a server. */
export interface CheckedRequest {
  ttlMs: number;
  ttl: string;
  waitMs: number;
}

// What an acquire and a conversion check alike: op, TTL, wait, idempotency key.
function checkRequest(o: ConvertOptions, limits: ContractLimits): CheckedRequest {
  if (typeof o.op !== 'string' || o.op === '') throw new InvalidRequestError('op is empty');
  const ttlMs = o.ttlMs ?? DEFAULT_TTL_MS;
  const ttl = wholeMs('ttlMs', ttlMs, 1, limits.ttl_ms);
  const waitMs = o.waitMs ?? 0;
  wholeMs('waitMs', waitMs, 0, Number.MAX_SAFE_INTEGER);
  const maxKey = limits.idempotency_key_chars;
  if (o.idempotencyKey !== undefined && (!KEY_RE.test(o.idempotencyKey) || o.idempotencyKey.length > maxKey))
    throw new InvalidRequestError(`idempotencyKey must be 1..${maxKey} of [A-Za-z0-9._:-]`);
  return { ttlMs, ttl, waitMs };
}

/** An acquire's options checked without a server: its TTL (as sent) and its wait, or InvalidRequestError. */
export function checkAcquire(o: AcquireOptions, limits: ContractLimits): CheckedRequest {
  checkOwner(o.owner, limits.owner_bytes);
  const checked = checkRequest(o, limits);
  if (o.reenter && o.idempotencyKey) throw new InvalidRequestError('reenter and idempotencyKey exclude each other');
  if (o.reenter && (!o.reenter.id || !o.reenter.token)) throw new InvalidRequestError('reenter needs id and token');
  return checked;
}

/** A conversion checked without a server: the lock's proof, then as an acquire (without owner). */
export function checkConvert(lock: { id: string; token: string }, o: ConvertOptions, limits: ContractLimits): CheckedRequest {
  if (typeof lock?.id !== 'string' || lock.id === '' || typeof lock.token !== 'string' || lock.token === '')
    throw new InvalidRequestError("convert needs the lock's id and token");
  const { owner, reenter } = o as AcquireOptions; // from JavaScript: an acquire's options given as they were
  if (owner !== undefined || reenter !== undefined)
    throw new InvalidRequestError('convert takes no owner or reenter: the lock keeps its owner, and its proof is the first argument');
  return checkRequest(o, limits);
}

/** A request's paths, normalised, in the operation's role order (`targets` by the contract's roles). */
export function pathsFor(contract: Contract, o: { op: string; paths?: string[]; targets?: Record<string, string> }): string[] {
  if (o.paths && o.targets) throw new InvalidRequestError('give paths or targets, not both');
  if (o.paths) return o.paths.map((p) => normalizePath(p));
  if (!o.targets) throw new InvalidRequestError('a request needs paths (or targets by role)');
  const roles = rolesIn(contract, o.op);
  if (!roles) throw new InvalidRequestError(`unknown operation '${o.op}'`);
  const given = Object.keys(o.targets);
  if (given.length !== roles.length || roles.some((r) => !(r in o.targets!)))
    throw new InvalidRequestError(`operation '${o.op}' takes the roles ${roles.join(', ')}; got ${given.join(', ')}`);
  return roles.map((r) => normalizePath(o.targets![r]));
}

const LOCK_ID_RE = /^[A-Za-z0-9-]+$/;

/** A lock id by the engine's rule: 1..id_chars characters of [A-Za-z0-9-]. */
export function checkLockId(what: string, id: unknown, limits: ContractLimits): string {
  if (typeof id !== 'string' || !LOCK_ID_RE.test(id) || id.length > limits.id_chars)
    throw new InvalidRequestError(`${what} must be 1..${limits.id_chars} characters of [A-Za-z0-9-]`);
  return id;
}

/** A list cursor: '' or the `next` of a page. */
export function checkCursor(after: string): string {
  if (after !== '' && !/^\d{1,16}$/.test(after)) throw new InvalidRequestError(`'${after}' is not a cursor`);
  return after;
}
