// The codec: a call's keys and arguments built by name from the library's
// contract (docs/lua-protocol.md#contract-read-only: `keys`, and each
// function's `args` and `optional` groups), and its replies read into the
// client's types by tables of their fields in the rows' order.
import { BackendError, Conflict } from './errors';
import type { Contract } from './library';
import { overLimitOf } from './limits';
import type { AcquireResult, Blocker, LockInfo, Target, Waiter } from './types';

// ---- keys and arguments ----------------------------------------------------

/**
 * The namespace's keys of a call: `keys.pattern` with each of `keys.suffixes`
 * in order; none for a function whose contract entry has `keys: 0`.
 */
export function keysOf(contract: Contract, namespace: string, fn?: string): string[] {
  if (fn !== undefined && contract.functions?.find((f) => f.name === fn)?.keys === 0) return [];
  const pattern = contract.keys.pattern.replace('{NS}', `{${namespace}}`);
  return contract.keys.suffixes.map((suffix) => pattern.replace('<suffix>', suffix));
}

/** A call's arguments and where each named one is (-1: the library takes no such argument). */
export interface CallArgs {
  args: string[];
  at: Record<string, number>;
}

/**
 * The arguments of function `fn` by the names of its contract entry: its
 * `args` in order ("path..." stands for `paths`), then every group of
 * `optional` in order. A name this client has no value for is an error in
 * `args`; in an optional group it ends the arguments there (a newer
 * library's group this client does not know).
 */
export function argsByName(contract: Contract, fn: string, values: Record<string, string>, paths: string[]): CallArgs {
  const entry = contract.functions?.find((f) => f.name === fn);
  if (!entry) throw new BackendError(`the library's contract names no function '${fn}'`);
  const args: string[] = [];
  const at: Record<string, number> = {};
  const put = (name: string) => {
    at[name] = args.length;
    if (name === 'path...') args.push(...paths);
    else args.push(values[name]);
  };
  for (const name of entry.args) {
    if (name !== 'path...' && values[name] === undefined)
      throw new BackendError(`the library's ${fn} takes an argument '${name}' this client does not know`);
    put(name);
  }
  for (const group of entry.optional ?? []) {
    if (group.some((name) => values[name] === undefined)) break;
    group.forEach(put);
  }
  return { args, at };
}

/**
 * The values of an acquire's arguments by name (docs/lua-protocol.md#acquire),
 * also a conversion's (#convert: the same names); reserve_ms and
 * deadline_ms per attempt.
 */
export interface AcquireValues {
  owner: string;
  op: string;
  ttl_ms: string;
  new_id: string;
  new_token: string;
  reenter_id: string;
  reenter_token: string;
  idempotency_key: string;
  fair: string;
  waiter_id: string;
  reserve_ms: string;
  deadline_ms: string;
  default_limits: string;
}

/** The functions that take an acquire's arguments. */
export type AcquireFunction = 'acquire' | 'convert';

/** An acquire's (or a conversion's) arguments, and a copy of them with one attempt's reserve_ms and deadline_ms. */
export class AcquireArgs {
  readonly args: string[];
  private readonly reserveAt: number;
  private readonly deadlineAt: number;
  constructor(
    contract: Contract,
    values: AcquireValues,
    paths: string[],
    readonly fn: AcquireFunction = 'acquire',
  ) {
    const { args, at } = argsByName(contract, fn, { ...values }, paths);
    this.args = args;
    this.reserveAt = at.reserve_ms ?? -1;
    this.deadlineAt = at.deadline_ms ?? -1;
    if (this.reserveAt < 0) throw new BackendError(`the library's ${fn} takes no reserve_ms`);
  }
  /** The arguments of one attempt: reserve_ms and deadline_ms ('' for none) put in by name. */
  attempt(reserveMs: number, deadlineMs: string): string[] {
    const a = this.args.slice();
    a[this.reserveAt] = String(reserveMs);
    if (this.deadlineAt >= 0) a[this.deadlineAt] = deadlineMs;
    else if (deadlineMs !== '') throw new BackendError(`the library's ${this.fn} takes no deadline_ms`);
    return a;
  }
}

// ---- replies -----------------------------------------------------------------

// A reply row read by a table of its fields in the row's order
// (docs/lua-protocol.md): each field's name and how its value reads.
type RowFields<T> = { [K in keyof T]-?: (v: unknown) => T[K] };
const str = (v: unknown): string => String(v);
// A field a newer library adds at the end of a row: '' when absent.
const optStr = (v: unknown): string => (v === undefined || v === null ? '' : String(v));
const num = (v: unknown): number => Number(v);
const flag = (v: unknown): boolean => Number(v) === 1;
const relation = (v: unknown): Conflict['relation'] => String(v) as Conflict['relation'];

function rowOf<T>(fields: RowFields<T>, row: unknown[], from = 0): T {
  const out: Partial<T> = {};
  let i = from;
  for (const k of Object.keys(fields) as (keyof T)[]) out[k] = fields[k](row[i++]);
  return out as T;
}

function targetsOf(pairs: unknown): Target[] {
  const a = pairs as unknown[];
  const out: Target[] = [];
  for (let i = 0; i + 1 < a.length; i += 2) out.push({ role: String(a[i]), path: String(a[i + 1]) });
  return out;
}

const CONFLICT_FIELDS: RowFields<Conflict> = {
  id: str, op: str, role: str, path: str, owner: str, expiresInMs: num, requestedRole: str, requestedPath: str, relation, queued: flag,
};
const LOCK_FIELDS: RowFields<LockInfo> = { id: str, owner: str, op: str, fence: num, holds: num, expiresInMs: num, targets: targetsOf };
const BLOCKER_FIELDS: RowFields<Blocker> = {
  queued: flag, id: str, owner: str, op: str, role: str, path: str, requestedRole: str, requestedPath: str, relation,
  fence: num, holds: num, expiresInMs: num, waitedMs: num,
};
// `converts`: protocol 4.5 (an older library's rows end before it).
const WAITER_FIELDS: RowFields<Waiter> = {
  id: str, owner: str, op: str, waitedMs: num, expiresInMs: num, targets: targetsOf, converts: optStr,
};

/**
 * An acquire's (or a conversion's) reply as its result: a grant, a refusal
 * (a conversion's would_deadlock has refused's fields), a failed proof, a limit.
 */
export function acquireResult(r: unknown[], ttlMs: number, fn: AcquireFunction = 'acquire'): AcquireResult {
  if (r[0] === 'granted')
    return {
      granted: true,
      grant: { id: String(r[1]), token: String(r[2]), fence: Number(r[3]), expiresInMs: Number(r[4]), holds: Number(r[5]), ttlMs },
    };
  if (r[0] === 'refused') return { granted: false, conflict: rowOf(CONFLICT_FIELDS, r, 1) };
  if (r[0] === 'would_deadlock') return { granted: false, conflict: rowOf(CONFLICT_FIELDS, r, 1), wouldDeadlock: true };
  if (r[0] === 'not_holder') return { granted: false, notHolder: true };
  if (r[0] === 'over_limit') return { granted: false, overLimit: overLimitOf(r) };
  throw new BackendError(`redis: ${fn}: unexpected reply ${JSON.stringify(r)}`);
}

/** The rows of a `locks` reply (after status and cursor). */
export const lockRows = (r: unknown[]): LockInfo[] => (r.slice(2) as unknown[][]).map((l) => rowOf(LOCK_FIELDS, l));
/** The rows of a `blockers` reply (after status and truncated). */
export const blockerRows = (r: unknown[]): Blocker[] => (r.slice(2) as unknown[][]).map((b) => rowOf(BLOCKER_FIELDS, b));
/** The rows of a `waiters` reply (after status). */
export const waiterRows = (r: unknown[]): Waiter[] => (r.slice(1) as unknown[][]).map((w) => rowOf(WAITER_FIELDS, w));
