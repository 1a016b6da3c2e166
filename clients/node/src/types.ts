// The public types of the client's calls: its options, what acquire
// answers, and the rows list, blockers and waiters read (src/codec.ts reads
// them from the replies).
import type Redis from 'ioredis';
import type { RedisOptions } from 'ioredis';

import type { Conflict } from './errors';
import type { LeaseKeeper, Lease } from './keeper';
import type { LimitRefusal } from './limits';
import type { RedisClient } from './topology';

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
  /**
   * Refused by `conflict`. `wouldDeadlock` (a conversion only): the lock that
   * refuses it is itself waiting to convert to something this lock refuses;
   * answered at once, the lock unchanged (docs/design.md#conversion).
   */
  | { granted: false; conflict: Conflict; wouldDeadlock?: true; notHolder?: undefined; overLimit?: undefined }
  | { granted: false; notHolder: true; conflict?: undefined; overLimit?: undefined; wouldDeadlock?: undefined }
  /** A limit of the namespace refused it (at once, also when it would wait; src/limits.ts). */
  | { granted: false; overLimit: LimitRefusal; conflict?: undefined; notHolder?: undefined; wouldDeadlock?: undefined };

/**
 * A conversion's options (`PathLock.convert`, docs/design.md#conversion):
 * an acquire's, without `owner` (the lock keeps its own) and `reenter` (the
 * lock to convert is the call's first argument). `paths`/`targets` are the
 * new operation's; `ttlMs` the lease on success; `waitMs`, `fair`,
 * `signal` and `timeoutMs` wait as an acquire waits, holding the lock as it
 * is; `idempotencyKey` makes a retry of a lost reply safe.
 */
export type ConvertOptions = Omit<AcquireOptions, 'owner' | 'reenter'>;

/**
 * A conversion's answer: granted (the lock's own id and token, a new higher
 * fence, the lease now + ttl), refused (`conflict`, with `wouldDeadlock`
 * for a deadlock of two conversions), `notHolder`, `overLimit`. Anything
 * but a grant leaves the lock as it was.
 */
export type ConvertResult = AcquireResult;

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

/**
 * What `PathLock.blockers` asks about: a request for `op` on `paths` (or
 * `targets` by role), at most `limit` (1..1000, default 1000) rows.
 * `converts` (since 1.1.0; protocol 4.6) makes it the dry run of a
 * conversion of that lock (its id; no token needed) to `op` on these paths,
 * judged as `convert` judges it: never the lock itself, nor its own place
 * in line, nor a place in line the lock as it is now refuses; with `fair:
 * false`, held locks only (then `limit` counts them only); `fair: false`
 * without `converts` is an InvalidRequestError. A `converts` that names no
 * live lock leaves nothing out (the answer without it).
 */
export interface BlockersOptions {
  op: string;
  paths?: string[];
  targets?: Record<string, string>;
  limit?: number;
  converts?: string;
  fair?: boolean;
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
  /** The operation it waits for (a waiting conversion: the one it converts to). */
  op: string;
  waitedMs: number;
  expiresInMs: number;
  targets: Target[];
  /**
   * A waiting conversion: the id of the lock it converts; '' for a waiting
   * acquire (and from a library older than protocol 4.5, which does not say).
   */
  converts: string;
}

export interface LockOptions extends AcquireOptions {
  /** Keep the lease renewed while the guard holds it. */
  keeper?: LeaseKeeper;
  /** Told once when the keeper loses the lease. */
  onLost?: (lease: Lease) => void;
}
