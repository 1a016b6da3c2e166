// The client: one namespace on one Redis deployment (standalone, Sentinel or
// Cluster, through ioredis), every operation one call of a function of the
// pathlock Functions library (docs/lua-protocol.md).
import { randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis, { Cluster, RedisOptions } from 'ioredis';
import calculateSlot = require('cluster-key-slot');

import {
  AbortError,
  BackendError,
  Conflict,
  InvalidRequestError,
  LayoutError,
  LockRefusedError,
  NotHolderError,
  OverLimitError,
} from './errors';
import { Contract, ContractLimits, LibraryInfo, parseContract, parseLibrary, prefixOfName, rolesIn } from './library';
import { DefaultLimits, LimitRefusal, Limits, LimitsStatus, limitsStatusOf, limitsText, overLimitOf } from './limits';
import { normalizePath, pathsOverlap, textProblem } from './paths';
import { WakeHub, WakeNode } from './wake';
import type { LeaseKeeper, Lease } from './keeper';

export type RedisClient = Redis | Cluster;

/**
 * The default matrix's Functions library shipped in this package (also
 * `require.resolve('pathlock/library.lua')`): pass it as `libraryFile`.
 */
export const defaultLibraryFile: string = join(__dirname, '..', '..', 'library', 'pathlock_library.lua');

/**
 * Is this ioredis client a Cluster? Read from ioredis's `isCluster` flag, so
 * that a client made by the application's own copy of ioredis is recognised.
 */
export function isCluster(r: RedisClient): r is Cluster {
  return (r as { isCluster?: boolean }).isCluster === true;
}

export interface PathLockOptions {
  /**
   * An ioredis client (Redis, including Sentinel and TLS, or Cluster), owned
   * by the caller, or a URL (`redis://`, `rediss://`) for a connection this
   * client opens and closes. A given client must not resend commands after a
   * reconnect (`autoResendUnfulfilledCommands: false`): a lock call whose
   * reply was lost may have run, and must not run twice.
   */
  redis: RedisClient | string;
  /** 1..128 of [A-Za-z0-9._:-]. */
  namespace: string;
  /** The library text (loaded when missing, without REPLACE). */
  library?: string;
  /** A file holding the library text. */
  libraryFile?: string;
  /** `pl_v4_<H>_`: call an already loaded library without its text. */
  functionPrefix?: string;
  /** With neither library nor prefix: pick the loaded library of this matrix fingerprint. */
  fingerprint?: string;
  /** Extra ioredis options when `redis` is a URL. */
  redisOptions?: RedisOptions;
  /**
   * Opens the connection that subscribes to wake-ups (a subscribed
   * connection runs nothing else). Default: `duplicate()` of a Redis client;
   * for a Cluster, a connection to the master serving the namespace's slot.
   */
  subscriber?: () => Redis;
  /**
   * Gets the client's warnings: for now one, when the user may not read the
   * default limits (GET pl:limits; then none apply to its requests).
   * Default: `process.emitWarning`.
   */
  onWarning?: (message: string) => void;
}

/** Options of a single call: `signal` rejects it with `signal.reason` when aborted, even in flight. */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface Target {
  role: string;
  path: string;
}

export interface AcquireOptions {
  owner: string;
  op: string;
  /** The operation's paths in its roles' order (`[src, dst]` for a move). */
  paths?: string[];
  /** The paths by role name (needs the library text, which names the roles). */
  targets?: Record<string, string>;
  /** The lease, ms (default 30000). */
  ttlMs?: number;
  /** How long a refused request waits, ms (default 0: answer at once). */
  waitMs?: number;
  /** false: ignore the line of older waiting requests, and take no place in it. */
  fair?: boolean;
  /** Take a lock this caller holds once more, by its proof. Never waits. */
  reenter?: { id: string; token: string };
  /** 1..128 of [A-Za-z0-9._:-], random per logical acquire: makes a retry safe. */
  idempotencyKey?: string;
  /**
   * Ends the call when aborted, also while a call is in flight on a stalled
   * server: rejects with `signal.reason` (AbortSignal.timeout: a
   * `TimeoutError`; abort(): an `AbortError`), out of the line at once; a
   * grant that arrives after the abort is released.
   */
  signal?: AbortSignal;
  /**
   * The longest this call may take, ms (waiting included): then it rejects
   * with a `TimeoutError`, as with `signal: AbortSignal.timeout(timeoutMs)`,
   * and each attempt also tells the server that moment (`deadline_ms` on the
   * server's clock, docs/lua-protocol.md#deadlines), so an attempt a stalled
   * server runs after the caller gave up grants nothing.
   */
  timeoutMs?: number;
}

export interface Grant {
  id: string;
  token: string;
  fence: number;
  expiresInMs: number;
  holds: number;
  /** The lease asked for (what renewals use). */
  ttlMs: number;
}

export type AcquireResult =
  | { granted: true; grant: Grant }
  | { granted: false; conflict: Conflict; notHolder?: undefined; overLimit?: undefined }
  | { granted: false; notHolder: true; conflict?: undefined; overLimit?: undefined }
  /** A limit of the namespace refused it (at once, also when it would wait; src/limits.ts). */
  | { granted: false; overLimit: LimitRefusal; conflict?: undefined; notHolder?: undefined };

export interface LockInfo {
  id: string;
  owner: string;
  op: string;
  fence: number;
  holds: number;
  expiresInMs: number;
  targets: Target[];
}

export interface ListPage {
  locks: LockInfo[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

export interface Blocker {
  queued: boolean;
  id: string;
  owner: string;
  op: string;
  role: string;
  path: string;
  requestedRole: string;
  requestedPath: string;
  relation: Conflict['relation'];
  fence: number;
  holds: number;
  expiresInMs: number;
  waitedMs: number;
}

export interface Waiter {
  id: string;
  owner: string;
  op: string;
  waitedMs: number;
  expiresInMs: number;
  targets: Target[];
}

export interface LockOptions extends AcquireOptions {
  /** Keep the lease renewed while the guard holds it. */
  keeper?: LeaseKeeper;
  /** Told once when the keeper loses the lease. */
  onLost?: (lease: Lease) => void;
}

/**
 * Re-check period while waiting. MAX_RESERVATION_MS, MAX_TTL_MS and
 * MAX_OWNER_BYTES are protocol 4.2's values, for reference: the client
 * checks input against the loaded library's contract (`contract().limits`).
 */
export const RECHECK_MS = 200;
export const MAX_RESERVATION_MS = 2000;
export const MAX_TTL_MS = 604_800_000;
export const DEFAULT_TTL_MS = 30_000;

const NAMESPACE_RE = /^[A-Za-z0-9._:-]{1,128}$/;
const KEY_RE = /^[A-Za-z0-9._:-]+$/;

// Random bytes for lock ids and tokens, drawn from the CSPRNG 4 KiB at a
// time: one randomBytes call per id cost 12% of a pair's time (a profile of
// bench.js), as much as the rest of the client's own work.
const randomPool = Buffer.alloc(4096);
let randomUsed = randomPool.length;

function randomHex(bytes: number): string {
  if (randomUsed + bytes > randomPool.length) {
    randomFillSync(randomPool);
    randomUsed = 0;
  }
  const hex = randomPool.toString('hex', randomUsed, randomUsed + bytes);
  randomUsed += bytes;
  return hex;
}

function wholeMs(what: string, v: number, lo: number, hi: number): string {
  if (!Number.isSafeInteger(v) || v < lo || v > hi)
    throw new InvalidRequestError(`${what} must be a whole number of ms from ${lo} to ${hi}, got ${v}`);
  return String(v);
}

export const MAX_OWNER_BYTES = 256;

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

/**
 * A lock call whose reply was lost may have run, so the ioredis client must
 * never send it again by itself: not on reconnecting
 * (`autoResendUnfulfilledCommands: false`; for a Cluster in `redisOptions`),
 * and for a Cluster not after a node's connection closed under it either
 * (`retryDelayOnFailover: 0`: ioredis otherwise sends the command again
 * 100 ms later, issue 41).
 */
function checkNoResend(r: RedisClient): void {
  const resend = isCluster(r) ? r.options.redisOptions?.autoResendUnfulfilledCommands : r.options.autoResendUnfulfilledCommands;
  if (resend !== false)
    throw new InvalidRequestError(
      'the ioredis client must be created with autoResendUnfulfilledCommands: false ' +
        '(for a Cluster: redisOptions.autoResendUnfulfilledCommands): a lock call whose reply was lost may have run',
    );
  if (isCluster(r) && r.options.retryDelayOnFailover !== 0)
    throw new InvalidRequestError(
      'the ioredis Cluster must be created with retryDelayOnFailover: 0: otherwise it sends a command again ' +
        'after its connection closed, and a lock call whose reply was lost may have run',
    );
}

function isReplyError(e: unknown): e is Error {
  return e instanceof Error && e.name === 'ReplyError';
}

/**
 * `call()`'s answer, or a rejection when the connection closes while it is in
 * flight. With autoResendUnfulfilledCommands false (which this client needs),
 * ioredis drops the commands that were on a connection that closed and never
 * settles their promises: a call whose connection was cut would hang for ever
 * (issue 41; the kit's fault check shows it). A command sent on a connection
 * that is not ready waits in ioredis's offline queue and is not watched.
 * A Cluster rejects such a call by itself ("Connection is closed."), given
 * retryDelayOnFailover: 0 (checkNoResend).
 */
function untilClosed<T>(redis: RedisClient, call: () => Promise<T>): Promise<T> {
  if (isCluster(redis) || redis.status !== 'ready') return call();
  return new Promise<T>((resolve, reject) => {
    const onClose = () => reject(new Error('the connection closed before the reply arrived'));
    redis.once('close', onClose);
    call().then(resolve, reject).finally(() => redis.removeListener('close', onClose));
  });
}

// AbortSignal.any (Node 20.3), which the ES2022 lib does not declare.
function anySignal(signals: AbortSignal[]): AbortSignal {
  return (AbortSignal as unknown as { any(s: AbortSignal[]): AbortSignal }).any(signals);
}

// How old a reading of the server's clock may get before it is read again (docs/lua-protocol.md#deadlines).
const CLOCK_REFRESH_MS = 30_000;

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new AbortError();
}

/**
 * `call`'s answer, or a rejection with the signal's reason as soon as the
 * signal aborts (the call itself goes on; `onLate` gets its answer then).
 */
export function untilAborted<T>(call: Promise<T>, signal: AbortSignal | undefined, onLate?: (value: T) => void): Promise<T> {
  if (!signal) return call;
  if (signal.aborted) {
    call.then(onLate, () => undefined);
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      call.then(onLate, () => undefined);
      reject(abortReason(signal));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    call.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

// A reply row read by a table of its fields in the row's order
// (docs/lua-protocol.md): each field's name and how its value reads.
type RowFields<T> = { [K in keyof T]-?: (v: unknown) => T[K] };
const str = (v: unknown): string => String(v);
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
const WAITER_FIELDS: RowFields<Waiter> = { id: str, owner: str, op: str, waitedMs: num, expiresInMs: num, targets: targetsOf };

// The checks of an acquire's options that need no server: its TTL (as sent)
// and its wait, or InvalidRequestError.
function checkAcquire(o: AcquireOptions, limits: ContractLimits): { ttlMs: number; ttl: string; waitMs: number } {
  checkOwner(o.owner, limits.owner_bytes);
  if (typeof o.op !== 'string' || o.op === '') throw new InvalidRequestError('op is empty');
  const ttlMs = o.ttlMs ?? DEFAULT_TTL_MS;
  const ttl = wholeMs('ttlMs', ttlMs, 1, limits.ttl_ms);
  const waitMs = o.waitMs ?? 0;
  wholeMs('waitMs', waitMs, 0, Number.MAX_SAFE_INTEGER);
  if (o.reenter && o.idempotencyKey) throw new InvalidRequestError('reenter and idempotencyKey exclude each other');
  if (o.reenter && (!o.reenter.id || !o.reenter.token)) throw new InvalidRequestError('reenter needs id and token');
  const maxKey = limits.idempotency_key_chars;
  if (o.idempotencyKey !== undefined && (!KEY_RE.test(o.idempotencyKey) || o.idempotencyKey.length > maxKey))
    throw new InvalidRequestError(`idempotencyKey must be 1..${maxKey} of [A-Za-z0-9._:-]`);
  return { ttlMs, ttl, waitMs };
}

// An acquire's reply as its result (a grant, a refusal, a failed reentry).
function acquireResult(r: unknown[], ttlMs: number): AcquireResult {
  if (r[0] === 'granted')
    return {
      granted: true,
      grant: { id: String(r[1]), token: String(r[2]), fence: Number(r[3]), expiresInMs: Number(r[4]), holds: Number(r[5]), ttlMs },
    };
  if (r[0] === 'refused') return { granted: false, conflict: rowOf(CONFLICT_FIELDS, r, 1) };
  if (r[0] === 'not_holder') return { granted: false, notHolder: true };
  if (r[0] === 'over_limit') return { granted: false, overLimit: overLimitOf(r) };
  throw new BackendError(`redis: acquire: unexpected reply ${JSON.stringify(r)}`);
}

/**
 * A pathlock client for one namespace. Holds no global state: every client
 * has its own library state, subscriber and timers; `forNamespace()` shares
 * the connection and the library with a client of another namespace.
 */
export class PathLock {
  readonly namespace: string;
  readonly redis: RedisClient;
  private readonly ownsRedis: boolean;
  private readonly shared: {
    library?: LibraryInfo;
    resolving?: Promise<LibraryInfo>;
    contract?: Promise<Contract>;
    fingerprint?: string;
    wake: WakeHub;
    /** The server's clock as last read: [TIME in ms, performance.now() then]; null: TIME not allowed. */
    clock?: [number, number] | null;
    /** The default limits as last read. */
    defaults: DefaultLimits;
  };
  private readonly subscriberFactory?: () => Redis;
  /**
   * @internal The longest sleep of a wait between attempts (RECHECK_MS). A
   * test that sets it beyond its wait sees grants only through wake-ups.
   */
  recheckMs = RECHECK_MS;

  constructor(options: PathLockOptions, shared?: PathLock['shared']) {
    if (!NAMESPACE_RE.test(options.namespace ?? ''))
      throw new InvalidRequestError(`namespace must be 1..128 bytes of [A-Za-z0-9._:-], got '${options.namespace}'`);
    this.namespace = options.namespace;
    if (typeof options.redis === 'string') {
      this.redis = new Redis(options.redis, {
        ...options.redisOptions,
        autoResendUnfulfilledCommands: false,
        lazyConnect: false,
      });
      this.ownsRedis = true;
    } else {
      const r = options.redis;
      checkNoResend(r);
      this.redis = r;
      this.ownsRedis = false;
    }
    this.subscriberFactory = options.subscriber;
    if (shared) this.shared = shared;
    else {
      const warn = options.onWarning ?? ((m: string) => process.emitWarning(m, 'PathLockWarning'));
      this.shared = { fingerprint: options.fingerprint, wake: new WakeHub(), defaults: new DefaultLimits(warn) };
      let text = options.library;
      if (options.libraryFile !== undefined) text = readFileSync(options.libraryFile, 'utf8');
      if (text !== undefined) this.shared.library = parseLibrary(text);
      else if (options.functionPrefix !== undefined) {
        if (!/^pl_v\d+_[0-9a-f]+_$/.test(options.functionPrefix))
          throw new InvalidRequestError(`'${options.functionPrefix}' is not a function prefix (pl_v4_<H>_)`);
        this.shared.library = { name: 'pathlock_' + options.functionPrefix.slice(3, -1), prefix: options.functionPrefix };
      }
    }
  }

  /** A client of another namespace sharing this one's connection and library. */
  forNamespace(namespace: string): PathLock {
    return new PathLock(
      { redis: this.redis, namespace, subscriber: this.subscriberFactory },
      this.shared,
    );
  }

  /**
   * Closes the wake-up connections (shared with the clients of
   * `forNamespace()`), and the connection when this client opened it.
   */
  async close(): Promise<void> {
    await this.shared.wake.close();
    if (this.ownsRedis) await this.redis.quit().catch(() => this.redis.disconnect());
  }

  // ---- the library ---------------------------------------------------------

  /** The library this client calls (loading or discovering it first if needed). */
  async library(): Promise<LibraryInfo> {
    if (this.shared.library) return this.shared.library;
    if (!this.shared.resolving) {
      this.shared.resolving = this.discover().then(
        (lib) => (this.shared.library = lib),
        (e) => {
          this.shared.resolving = undefined;
          throw e;
        },
      );
    }
    return this.shared.resolving;
  }

  private masters(): Redis[] {
    return isCluster(this.redis) ? this.redis.nodes('master') : [this.redis];
  }

  // Finds the loaded pathlock library: FUNCTION LIST LIBRARYNAME pathlock_v4_*;
  // several matrices' libraries may be loaded, so a fingerprint chooses among
  // them (read from each library's `info`).
  private async discover(): Promise<LibraryInfo> {
    if (isCluster(this.redis) && this.redis.status !== 'ready') await this.redis.call('PING');
    const node = this.masters()[0];
    let reply: unknown[];
    try {
      reply = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', 'pathlock_v4_*')) as unknown[];
    } catch (e) {
      throw new BackendError(`cannot list the server's functions: ${(e as Error).message}`, { cause: e });
    }
    const found: LibraryInfo[] = [];
    for (const entry of reply) {
      const fields = entry as unknown[];
      const get = (k: string) => fields[fields.indexOf(k) + 1];
      const name = String(get('library_name'));
      if (!/^pathlock_v4_[0-9a-f]+$/.test(name)) continue;
      found.push({ name, prefix: prefixOfName(name) });
    }
    const want = this.shared.fingerprint;
    const matching = [];
    for (const lib of found) {
      const fp = (await this.describe(lib).catch(() => undefined))?.fingerprint;
      if (!want || fp === want) matching.push(lib);
    }
    if (matching.length === 1) return matching[0];
    throw new InvalidRequestError(
      matching.length === 0
        ? `no pathlock library${want ? ` of matrix fingerprint ${want}` : ''} is loaded: pass its text (library/libraryFile)`
        : `${matching.length} pathlock libraries are loaded (several matrices): pass fingerprint, library or functionPrefix`,
    );
  }

  /**
   * Which library and matrix this is: the library's `info` function when it
   * has one (undefined fields when it has none).
   */
  async describe(lib?: LibraryInfo): Promise<{
    library: string;
    prefix: string;
    matrixName?: string;
    matrixVersion?: string;
    fingerprint?: string;
    layout?: number;
    pathlockVersion?: string;
  }> {
    const l = lib ?? (await this.library());
    try {
      const r = (await this.masters()[0].call('FCALL_RO', l.prefix + 'info', 0)) as unknown[];
      if (Array.isArray(r) && r[0] === 'info')
        return {
          library: String(r[1]),
          prefix: l.prefix,
          matrixName: String(r[2]),
          matrixVersion: String(r[3]),
          fingerprint: String(r[4]),
          layout: Number(r[5]),
          pathlockVersion: String(r[6]),
        };
    } catch (e) {
      if (!isReplyError(e) || !/Function not found/i.test(e.message)) throw new BackendError(e instanceof Error ? e.message : String(e), { cause: e });
    }
    return { library: l.name, prefix: l.prefix };
  }

  /**
   * What the library says about itself (its function `contract`, protocol
   * 4.2): operations and roles, limits, keys, functions, replies, errors.
   * Read once per client (shared with its forNamespace() clients), loading
   * the library first where it is missing and its text is known. A library
   * older than 4.2 has none: BackendError naming the protocol.
   */
  async contract(): Promise<Contract> {
    if (!this.shared.contract) {
      this.shared.contract = this.readContract();
      this.shared.contract.catch(() => (this.shared.contract = undefined));
    }
    return this.shared.contract;
  }

  private async readContract(): Promise<Contract> {
    const lib = await this.library();
    const ask = async () => (await this.redis.call('FCALL_RO', lib.prefix + 'contract', '0')) as unknown[];
    let r: unknown[];
    try {
      try {
        r = await ask();
      } catch (e) {
        if (!isReplyError(e) || !/^ERR Function not found/.test(e.message) || !lib.text || !(await this.missing(lib))) throw e;
        await this.load();
        r = await ask();
      }
    } catch (e) {
      if (e instanceof BackendError) throw e;
      if (isReplyError(e) && /^ERR Function not found/.test(e.message))
        throw new BackendError(
          (await this.missing(lib))
            ? `the library ${lib.name} is not loaded on the server and its text was not given`
            : `the library ${lib.name} has no function 'contract': it is older than protocol 4.2 (pathlock 1.0), which this ` +
                'client needs; load the library shipped with this package (libraryFile: defaultLibraryFile)',
          { cause: e },
        );
      throw new BackendError(`redis: contract: ${e instanceof Error ? e.message : e}`, { cause: e, mayHaveRun: false });
    }
    if (!Array.isArray(r) || r[0] !== 'contract') throw new BackendError(`redis: contract: unexpected reply ${JSON.stringify(r)}`);
    return parseContract(String(r[1]));
  }

  // Is no library of this name loaded (on the first master)?
  private async missing(lib: LibraryInfo): Promise<boolean> {
    const reply = (await this.masters()[0].call('FUNCTION', 'LIST', 'LIBRARYNAME', lib.name)) as unknown[][];
    return !reply.some((f) => String(f[f.indexOf('library_name') + 1]) === lib.name);
  }

  // The namespace's keys, by the contract's pattern and suffixes.
  private keysOf(c: Contract): string[] {
    return c.keys.suffixes.map((k) => c.keys.pattern.replace('{NS}', `{${this.namespace}}`).replace('<suffix>', k));
  }

  /** Loads the library on every master (FUNCTION LOAD without REPLACE; "already exists" is success). */
  async load(): Promise<void> {
    const lib = await this.library();
    if (!lib.text) throw new BackendError(`the library ${lib.name} is not loaded on the server and its text was not given`);
    if (isCluster(this.redis) && this.redis.status !== 'ready') await this.redis.call('PING');
    await Promise.all(
      this.masters().map(async (node) => {
        try {
          await node.call('FUNCTION', 'LOAD', lib.text!);
        } catch (e) {
          if (isReplyError(e) && /already exists/.test(e.message)) return this.sameLibrary(node, lib);
          throw new BackendError(`FUNCTION LOAD of ${lib.name} failed: ${e instanceof Error ? e.message : e}`, { cause: e });
        }
      }),
    );
  }

  // A library of this name is loaded: it must be this text, else refused.
  private async sameLibrary(node: Redis, lib: LibraryInfo): Promise<void> {
    const reply = (await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', lib.name, 'WITHCODE')) as unknown[][];
    const entry = reply.find((f) => String(f[f.indexOf('library_name') + 1]) === lib.name);
    const code = entry ? String(entry[entry.indexOf('library_code') + 1]) : undefined;
    if (code !== undefined && code.trimEnd() !== lib.text!.trimEnd())
      throw new BackendError(`another library named ${lib.name} is loaded (its code differs from the one given); not replaced`);
  }

  // One function call. A call answered `Function not found` never ran: load
  // the library and send it again. Any other error is a BackendError; a
  // reply that did not arrive may hide a call that ran (mayHaveRun).
  private async fcall(name: string, args: string[], readOnly = false): Promise<unknown[]> {
    const lib = await this.library();
    const keys = this.keysOf(await this.contract());
    const send = () =>
      untilClosed(this.redis, () => this.redis.call(readOnly ? 'FCALL_RO' : 'FCALL', lib.prefix + name, keys.length, ...keys, ...args));
    let reply: unknown;
    try {
      try {
        reply = await send();
      } catch (e) {
        if (!(isReplyError(e) && /^ERR Function not found/.test(e.message) && lib.text)) throw e;
        await this.load();
        reply = await send();
      }
    } catch (e) {
      if (e instanceof BackendError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      throw new BackendError(`redis: ${name}: ${message}`, { cause: e, mayHaveRun: !isReplyError(e) });
    }
    const r = reply as unknown[];
    if (!Array.isArray(r)) throw new BackendError(`redis: ${name}: unexpected reply ${JSON.stringify(reply)}`);
    if (r[0] === 'invalid') throw new InvalidRequestError(String(r[1]));
    if (r[0] === 'layout') throw new LayoutError(Number(r[1]), Number(r[2]));
    return r;
  }

  // ---- requests ------------------------------------------------------------

  private async pathsOf(o: { op: string; paths?: string[]; targets?: Record<string, string> }): Promise<string[]> {
    if (o.paths && o.targets) throw new InvalidRequestError('give paths or targets, not both');
    if (o.paths) return o.paths.map((p) => normalizePath(p));
    if (!o.targets) throw new InvalidRequestError('a request needs paths (or targets by role)');
    const roles = rolesIn(await this.contract(), o.op);
    if (!roles) throw new InvalidRequestError(`unknown operation '${o.op}'`);
    const given = Object.keys(o.targets);
    if (given.length !== roles.length || roles.some((r) => !(r in o.targets!)))
      throw new InvalidRequestError(`operation '${o.op}' takes the roles ${roles.join(', ')}; got ${given.join(', ')}`);
    return roles.map((r) => normalizePath(o.targets![r]));
  }

  /** The roles of an operation in role order (from the contract); undefined for an unknown operation. */
  async rolesOf(op: string): Promise<string[] | undefined> {
    return rolesIn(await this.contract(), op);
  }

  /**
   * Acquires, waiting up to `waitMs` for a refused request. Answers a
   * refusal as data; throws InvalidRequestError for bad input, BackendError
   * when Redis fails, and the signal's reason when aborted.
   */
  async tryAcquire(o: AcquireOptions): Promise<AcquireResult> {
    if (o.timeoutMs === undefined) return this.acquireWithin(o, undefined);
    wholeMs('timeoutMs', o.timeoutMs, 1, Number.MAX_SAFE_INTEGER);
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const signal = o.signal ? anySignal([o.signal, timeout]) : timeout;
    return this.acquireWithin({ ...o, signal }, performance.now() + o.timeoutMs);
  }

  // tryAcquire, its caller giving up at giveUpAt (performance.now() clock) if set.
  private async acquireWithin(o: AcquireOptions, giveUpAt: number | undefined): Promise<AcquireResult> {
    // The first call reads the contract: the signal ends that wait too.
    const contract = await untilAborted(this.contract(), o.signal);
    const { limits } = contract;
    const { ttlMs, ttl, waitMs } = checkAcquire(o, limits);
    const fair = o.fair ?? true;
    const paths = await this.pathsOf(o);
    const signal = o.signal;
    // The default limits (src/limits.ts), read once per acquire; sent only
    // when there are some.
    const defaults = await untilAborted(this.shared.defaults.get(this.redis, contract), signal);
    if (signal?.aborted) throw abortReason(signal);
    const head = [
      o.owner,
      o.op,
      ttl,
      randomHex(12),
      randomHex(16),
      o.reenter?.id ?? '',
      o.reenter?.token ?? '',
      o.idempotencyKey ?? '',
      ...paths,
    ];
    // A reentry never waits, takes no place in line.
    const deadline = Date.now() + (o.reenter ? 0 : waitMs);
    const waits = !o.reenter && waitMs > 0;
    const waiterId = waits && fair ? 'w' + randomHex(12) : '';
    const attempt = async (reserve: number): Promise<unknown[]> => {
      const args = o.reenter && giveUpAt === undefined && !defaults ? head : [...head, fair ? '1' : '0', waiterId, String(reserve)];
      for (let tries = 0; ; tries++) {
        try {
          // In flight too, the signal ends the wait for the answer; a grant
          // that arrives after it is released.
          return await untilAborted(this.sendAcquire(args, giveUpAt, defaults), signal, (r) => this.releaseLate(r));
        } catch (e) {
          // Only an acquire with an idempotency key may be sent again after
          // its reply was lost: the retry gets the lock the first one made.
          if (e instanceof BackendError && e.mayHaveRun && o.idempotencyKey && tries < 2) continue;
          throw e;
        }
      }
    };
    const result = (r: unknown[]): AcquireResult => acquireResult(r, ttlMs);
    if (!waits) return result(await attempt(0));
    return this.waitLoop(paths, deadline, waiterId, signal, attempt, result, limits.reserve_ms);
  }

  // The wait loop of docs/lua-protocol.md "Waiting and the line".
  private async waitLoop(
    paths: string[],
    deadline: number,
    waiterId: string,
    signal: AbortSignal | undefined,
    attempt: (reserve: number) => Promise<unknown[]>,
    result: (r: unknown[]) => AcquireResult,
    maxReserveMs: number,
  ): Promise<AcquireResult> {
    const sleeper = new Sleeper();
    const onMessage = (payload: string) => {
      // Only a message naming an overlapping path (or an empty one) counts.
      if (payload !== '' && !payload.split('\n').some((p) => paths.some((q) => pathsOverlap(p, q)))) return;
      sleeper.wake();
    };
    const onAbort = () => sleeper.interrupt();
    signal?.addEventListener('abort', onAbort);
    let detach: (() => void) | undefined;
    let placeMayExist = false;
    try {
      for (;;) {
        const left = deadline - Date.now();
        const last = left <= 0;
        sleeper.woken = false;
        placeMayExist = waiterId !== '';
        const r = await attempt(last ? 0 : Math.min(left + RECHECK_MS, maxReserveMs));
        if (r[0] === 'granted') placeMayExist = false;
        const res = result(r);
        if (signal?.aborted) {
          // A grant that raced the abort is released, never dropped.
          this.releaseLate(r);
          throw abortReason(signal);
        }
        if (res.granted || res.notHolder || res.overLimit) return res; // over a limit: at once, out of the line
        if (last) {
          placeMayExist = false; // reserve 0: the refusal removed the place
          return res;
        }
        if (!detach) {
          // Subscribe, then try again at once (a removal before it is not missed).
          detach = await this.subscribeWake(onMessage);
          if (signal?.aborted) throw abortReason(signal);
          continue;
        }
        if (sleeper.woken) continue;
        const sleepMs = Math.min(deadline - Date.now(), this.recheckMs, res.conflict.expiresInMs + 1);
        await sleeper.sleep(Math.max(0, sleepMs), signal);
        if (signal?.aborted) throw abortReason(signal);
      }
    } catch (e) {
      if (placeMayExist) await this.leaveLine(waiterId, signal);
      throw e;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      detach?.();
    }
  }

  // One acquire call; with giveUpAt, its deadline_ms; then the default
  // limits, if any. A `late` reply (the server's clock ran ahead of the
  // estimate) changed nothing: sent once more with the clock it names, then
  // a BackendError.
  private async sendAcquire(args: string[], giveUpAt: number | undefined, defaults: string): Promise<unknown[]> {
    const tail = defaults ? [defaults] : [];
    if (giveUpAt === undefined) return this.fcall('acquire', tail.length ? [...args, '', ...tail] : args);
    for (let tries = 0; ; tries++) {
      const r = await this.fcall('acquire', [...args, await this.deadlineArg(giveUpAt), ...tail]);
      if (r[0] !== 'late') return r;
      this.shared.clock = [Number(r[1]), performance.now()];
      if (tries > 0)
        throw new BackendError("redis: acquire reached the server after its deadline twice (the server's clock runs ahead); nothing was taken", {
          mayHaveRun: false,
        });
    }
  }

  // deadline_ms: the server's clock (TIME, read again after 30 s) at giveUpAt; '' where TIME is not allowed.
  private async deadlineArg(giveUpAt: number): Promise<string> {
    let c = this.shared.clock;
    if (c === undefined || (c !== null && performance.now() - c[1] >= CLOCK_REFRESH_MS)) {
      try {
        const t = (await this.redis.call('TIME')) as string[];
        c = [Number(t[0]) * 1000 + Math.floor(Number(t[1]) / 1000), performance.now()];
      } catch (e) {
        if (!isReplyError(e)) throw new BackendError(`redis: TIME: ${e instanceof Error ? e.message : e}`, { cause: e, mayHaveRun: false });
        c = null; // an ACL without TIME: no deadline (protocol 4.1's behaviour)
      }
      this.shared.clock = c;
    }
    if (c === null) return '';
    return String(Math.floor(c[0] + (giveUpAt - c[1])));
  }

  // A grant whose caller gave up: released (a lost reply leaves it to its TTL).
  private releaseLate(r: unknown[]): void {
    if (r[0] === 'granted') this.release(String(r[1]), String(r[2])).catch(() => undefined);
  }

  // Subscribes to the namespace's wake channel for a waiting acquire; returns the unsubscribe.
  private async subscribeWake(onMessage: (payload: string) => void): Promise<() => void> {
    const c = await this.contract();
    const wakeKey = this.keysOf(c)[c.keys.suffixes.indexOf('wake')];
    return this.shared.wake.attach(wakeKey, () => this.wakeNode(), onMessage);
  }

  // Leaves the line after a failed wait (an abort does not wait for a server that may stall).
  private async leaveLine(waiterId: string, signal: AbortSignal | undefined): Promise<void> {
    const left = this.leave(waiterId).catch(() => undefined);
    if (!signal?.aborted) await left;
  }

  /**
   * Acquires or throws: LockRefusedError (with the conflict), NotHolderError
   * for a failed reentry, OverLimitError when a limit of the namespace refuses it.
   */
  async acquire(o: AcquireOptions): Promise<Grant> {
    const r = await this.tryAcquire(o);
    if (r.granted) return r.grant;
    if (r.notHolder) throw new NotHolderError(`no live lock ${o.reenter?.id} with that token to re-enter`);
    if (r.overLimit) throw new OverLimitError(r.overLimit);
    throw new LockRefusedError(r.conflict);
  }

  /**
   * Acquires and returns a guard that releases on `release()` or
   * `await using` (Symbol.asyncDispose); with a keeper, it renews the lease
   * meanwhile.
   */
  async lock(o: LockOptions): Promise<LockGuard> {
    const grant = await this.acquire(o);
    const guard = new LockGuard(this, grant);
    if (o.keeper) guard.lease = o.keeper.keep(this, grant, { onLost: o.onLost });
    return guard;
  }

  /**
   * Drops one hold; true when a live lock had this id and token. An aborted
   * `signal` stops waiting for the answer (the release may still run).
   */
  async release(id: string, token: string, options: CallOptions = {}): Promise<boolean> {
    const r = await untilAborted(this.fcall('release', [id, token]), options.signal);
    return r[0] === 'released';
  }

  /** Renews the lease to now + ttl (default: the lock's own TTL). */
  async renew(
    id: string,
    token: string,
    ttlMs?: number,
    options: CallOptions = {},
  ): Promise<{ renewed: true; expiresInMs: number } | { renewed: false }> {
    const maxTtl = ttlMs === undefined ? 0 : (await untilAborted(this.contract(), options.signal)).limits.ttl_ms;
    const ttl = ttlMs === undefined ? '' : wholeMs('ttlMs', ttlMs, 1, maxTtl);
    const r = await untilAborted(this.fcall('renew', [id, token, ttl]), options.signal);
    return r[0] === 'renewed' ? { renewed: true, expiresInMs: Number(r[1]) } : { renewed: false };
  }

  /** Is lock `id` live with `token`? Read-only (FCALL_RO). */
  async held(id: string, token: string, options: CallOptions = {}): Promise<boolean> {
    const r = await untilAborted(this.fcall('held', [id, token], true), options.signal);
    return Number(r[1]) === 1;
  }

  /** Drops a lock whatever its holds and token (administrators). */
  async forceRelease(id: string): Promise<boolean> {
    const r = await this.fcall('force_release', [id]);
    return r[0] === 'released';
  }

  // ---- limits per namespace (src/limits.ts; administrators) ----------------

  /**
   * Gives this namespace limits of its own, which replace the default whole
   * at once for every client; null takes them away. Its keys then do not
   * expire while it is idle.
   */
  async setLimits(limits: Limits | null): Promise<void> {
    const r = await this.fcall('set_limits', [limits === null ? '' : limitsText(limits)]);
    if (r[0] !== 'limits') throw new BackendError(`redis: set_limits: unexpected reply ${JSON.stringify(r)}`);
  }

  /** The limits in force in this namespace and its use of them (read-only; the default read afresh). */
  async limits(): Promise<LimitsStatus> {
    const r = await this.fcall('limits_ro', [], true);
    return limitsStatusOf(r, await this.shared.defaults.get(this.redis, await this.contract(), true));
  }

  /** Sets the default limits of every namespace without its own (pl:limits); every client sees them within 5 s, this one at once. */
  async setDefaultLimits(limits: Limits): Promise<void> {
    await this.shared.defaults.set(this.redis, await this.contract(), limits);
  }

  /** Takes a place out of the line (harmless when it is gone); true when one was removed. */
  async leave(waiterId: string): Promise<boolean> {
    const r = await this.fcall('leave', [waiterId]);
    return Number(r[1]) === 1;
  }

  /** One page of the live locks at or inside `prefix`, by fence. */
  async list(o: { prefix?: string; limit?: number; after?: string | null } = {}): Promise<ListPage> {
    const prefix = normalizePath(o.prefix ?? '/');
    const limit = wholeMs('limit', o.limit ?? 1000, 1, (await this.contract()).limits.list_limit);
    const after = o.after ?? '';
    if (after !== '' && !/^\d{1,16}$/.test(after)) throw new InvalidRequestError(`'${after}' is not a cursor`);
    const r = await this.fcall('list', [prefix, limit, after]);
    const locks = (r.slice(2) as unknown[][]).map((l) => rowOf(LOCK_FIELDS, l));
    const next = r[1] === '' || r[1] === null || r[1] === undefined ? null : String(r[1]);
    return { locks, next };
  }

  /** Every live lock at or inside `prefix`, page by page. */
  async *listAll(prefix = '/', pageSize = 1000): AsyncGenerator<LockInfo> {
    let after: string | null = null;
    do {
      const page: ListPage = await this.list({ prefix, limit: pageSize, after });
      yield* page.locks;
      after = page.next;
    } while (after !== null);
  }

  /** What would refuse a request for `op` on these paths now (read-only). */
  async blockers(
    o: { op: string; paths?: string[]; targets?: Record<string, string>; limit?: number },
  ): Promise<{ blockers: Blocker[]; truncated: boolean }> {
    const paths = await this.pathsOf(o);
    const limit = wholeMs('limit', o.limit ?? 1000, 1, (await this.contract()).limits.blockers_limit);
    const r = await this.fcall('blockers', [o.op, ...paths, limit], true);
    const blockers = (r.slice(2) as unknown[][]).map((b) => rowOf(BLOCKER_FIELDS, b));
    return { blockers, truncated: Number(r[1]) === 1 };
  }

  /** The waiting requests with a place in line at or inside `prefix`, oldest first (read-only). */
  async waiters(o: { prefix?: string; limit?: number } = {}): Promise<Waiter[]> {
    const prefix = normalizePath(o.prefix ?? '/');
    const limit = wholeMs('limit', o.limit ?? 1000, 1, (await this.contract()).limits.waiters_limit);
    const r = await this.fcall('waiters', [prefix, limit], true);
    return (r.slice(1) as unknown[][]).map((w) => rowOf(WAITER_FIELDS, w));
  }

  // ---- wake-ups --------------------------------------------------------------

  /** Open wake-up subscription connections of this client and its forNamespace() clients. */
  get wakeConnections(): number {
    return this.shared.wake.connections;
  }

  // Where this namespace's wake-ups are subscribed: the one subscriber of a
  // standalone or Sentinel client (or the `subscriber` factory's), or the
  // master serving the namespace's slot.
  private async wakeNode(): Promise<WakeNode> {
    const factory = this.subscriberFactory;
    if (factory) return { key: 'subscriber', open: () => factory() };
    const r = this.redis;
    if (!isCluster(r)) return { key: 'redis', open: () => r.duplicate() };
    const node = await this.slotMaster(r);
    return { key: `${node.options.host}:${node.options.port}`, open: () => node.duplicate() };
  }

  // Sharded pub/sub: the master serving the namespace's slot, found with
  // public calls only (CLUSTER SLOTS, and the slot of the hash tag as
  // cluster-key-slot computes it for ioredis).
  private async slotMaster(r: Cluster): Promise<Redis> {
    const slot = calculateSlot(this.namespace);
    if (r.status !== 'ready') await r.call('PING');
    const ranges = (await r.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][];
    const range = ranges.find(([lo, hi]) => slot >= Number(lo) && slot <= Number(hi));
    const masters = r.nodes('master');
    const node = range
      ? masters.find((n) => n.options.port === Number(range[2][1]) && [range[2][0], 'localhost'].includes(String(n.options.host)))
      : undefined;
    if (!node) throw new BackendError(`no master known for slot ${slot} of namespace ${this.namespace}`);
    return node;
  }
}

// The sleep of a wait between attempts: ended early by a relevant wake-up
// (which also marks `woken`, so a wake-up during an attempt is not lost) or
// by the abort.
class Sleeper {
  /** A relevant wake-up arrived since the last attempt began. */
  woken = false;
  private wakeUp?: () => void;
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }
  interrupt(): void {
    this.wakeUp?.();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
      if (this.woken || signal?.aborted) done();
    });
  }
}

/**
 * A held lock that releases itself: call `release()` in `finally`, or
 * declare it with `await using` (Symbol.asyncDispose). Releasing twice is
 * harmless; the keeper (if any) stops before the release, so a released
 * lock is never renewed.
 */
export class LockGuard {
  readonly grant: Grant;
  /** The keeper's lease, when one keeps it. */
  lease?: Lease;
  private released?: Promise<boolean>;
  constructor(
    private readonly client: PathLock,
    grant: Grant,
  ) {
    this.grant = grant;
  }
  get fence(): number {
    return this.grant.fence;
  }
  /** true once the keeper found the lease lost. */
  get lost(): boolean {
    return this.lease?.lost ?? false;
  }
  /** Aborted when the keeper loses the lease (never without a keeper). */
  get signal(): AbortSignal {
    return this.lease?.signal ?? new AbortController().signal;
  }
  /** Is the lock still held with its token (read-only check before a storage commit)? */
  held(): Promise<boolean> {
    return this.client.held(this.grant.id, this.grant.token);
  }
  /** Releases (once); true when the lock was still held. */
  release(): Promise<boolean> {
    if (!this.released)
      this.released = (async () => {
        if (this.lease) await this.lease.stop();
        return this.client.release(this.grant.id, this.grant.token);
      })();
    return this.released;
  }
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
