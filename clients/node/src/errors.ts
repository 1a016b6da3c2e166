// Typed errors of the client. A refusal is an error only where the caller
// asked for a lock it cannot work without (`lock()`, `acquire()`); the
// non-throwing `tryAcquire()` answers it as data.

/** A lock that refused a request (or an older waiter, when `queued`). */
export interface Conflict {
  /** The refusing lock's id (for a waiter: its waiter id). */
  id: string;
  op: string;
  role: string;
  path: string;
  owner: string;
  /** What is left of its lease (a waiter: of its reservation). */
  expiresInMs: number;
  requestedRole: string;
  requestedPath: string;
  relation: 'same' | 'held_ancestor' | 'held_descendant';
  /** true: an older waiting request refused it, not a held lock. */
  queued: boolean;
}

/** Base class of every error this package throws. */
export class PathLockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad input: a malformed path, an unknown operation, a bad option. Nothing was changed. */
export class InvalidRequestError extends PathLockError {}

/**
 * The request was refused (after waiting, if it waited); `conflict` says by
 * what. `wouldDeadlock` (a conversion only): the refusing lock is itself
 * waiting to convert to something the converting lock refuses, so this
 * conversion was answered at once (docs/design.md#conversion).
 */
export class LockRefusedError extends PathLockError {
  readonly conflict: Conflict;
  readonly wouldDeadlock: boolean;
  constructor(conflict: Conflict, wouldDeadlock = false) {
    super(
      `${wouldDeadlock ? 'would deadlock' : 'refused'}: ${conflict.owner} holds ${conflict.op} (${conflict.role}) on ${conflict.path}` +
        ` (${conflict.relation} of ${conflict.requestedRole} ${conflict.requestedPath})` +
        (conflict.queued ? ', waiting in line' : '') +
        (wouldDeadlock ? ' and waits to convert to an operation this lock refuses' : ''),
    );
    this.conflict = conflict;
    this.wouldDeadlock = wouldDeadlock;
  }
}

/** A reentry or a conversion (or a release/renew through a guard) named no live lock with that id and token. */
export class NotHolderError extends PathLockError {}

/**
 * A limit of the namespace (or of the owner in it) refused the request, at
 * once even when it would wait: `limit` names it, `max` is its value and
 * `count` what the namespace (the owner) has now. Nothing was taken.
 */
export class OverLimitError extends PathLockError {
  readonly limit: 'locks' | 'places' | 'owner_locks';
  readonly max: number;
  readonly count: number;
  constructor(refusal: { limit: 'locks' | 'places' | 'owner_locks'; max: number; count: number }) {
    super(`over the limit on ${refusal.limit}: ${refusal.count} of at most ${refusal.max}`);
    this.limit = refusal.limit;
    this.max = refusal.max;
    this.count = refusal.count;
  }
}

/**
 * Redis could not be reached or answered an error (NOPERM, OOM, a data
 * layout of another version, a lost reply). `mayHaveRun` is true when the
 * command was sent and its reply was lost: it may have run.
 */
export class BackendError extends PathLockError {
  readonly mayHaveRun: boolean;
  constructor(message: string, options?: { cause?: unknown; mayHaveRun?: boolean }) {
    super(message, options);
    this.mayHaveRun = options?.mayHaveRun ?? false;
  }
}

/** The namespace was written by a library of another data layout. */
export class LayoutError extends BackendError {
  readonly stored: number;
  readonly mine: number;
  constructor(stored: number, mine: number) {
    super(`the namespace was written with data layout ${stored}; this library is layout ${mine}`);
    this.stored = stored;
    this.mine = mine;
  }
}

/** The reason of a lost lease's `signal`: the lock is gone ('missing') or its end passed unrenewed ('expired'). */
export class LeaseLostError extends PathLockError {
  readonly id: string;
  readonly reason: 'missing' | 'expired';
  constructor(id: string, reason: 'missing' | 'expired') {
    super(`the lease of lock ${id} was lost (${reason})`);
    this.id = id;
    this.reason = reason;
  }
}

/** The error an aborted wait rejects with when its signal carries no reason. */
export class AbortError extends PathLockError {
  readonly code = 'ABORT_ERR';
  constructor(message = 'the wait was aborted') {
    super(message);
  }
}
