// The lease keeper: renews kept leases after a third of their TTL and
// reports a lease lost (the `lost` flag, the `lost` event and the lease's
// own callback) when a renewal is refused or the lease's end passes without
// a successful renewal. Its view of the lease end is measured from before
// each renewal was sent, so it errs towards reporting loss early.
import { EventEmitter } from 'node:events';

import type { PathLock } from './client';
import type { Grant } from './types';
import { LeaseLostError } from './errors';

export type LostReason = 'missing' | 'expired';

export interface Lease {
  readonly grant: Grant;
  readonly lost: boolean;
  /** Why it was lost: the lock was gone ('missing') or its end passed unrenewed ('expired'). */
  readonly lostReason?: LostReason;
  /** The last renewal error, if renewals fail. */
  readonly lastError?: unknown;
  /**
   * Aborted when the lease is lost (its reason a `LeaseLostError`), never
   * otherwise: pass it to the work the lock protects, so that work stops
   * when the lock is gone (etcd's `Session.Done()`).
   */
  readonly signal: AbortSignal;
  /** Stops keeping it: waits for a renewal in flight; none follows. */
  stop(): Promise<void>;
}

class KeptLease implements Lease {
  lost = false;
  lostReason?: LostReason;
  lastError?: unknown;
  stopped = false;
  localEnd: number;
  timer?: NodeJS.Timeout;
  endTimer?: NodeJS.Timeout;
  inflight?: Promise<void>;
  readonly lostController = new AbortController();
  get signal(): AbortSignal {
    return this.lostController.signal;
  }
  constructor(
    readonly keeper: LeaseKeeper,
    readonly client: PathLock,
    public grant: Grant,
    readonly onLost?: (lease: Lease) => void,
  ) {
    this.localEnd = Date.now() + grant.expiresInMs;
  }
  stop(): Promise<void> {
    return this.keeper.stop(this);
  }
}

/** @internal LockGuard.convert: the lock `lease` keeps was converted (sent at `sentAt`) to `grant`. */
export function leaseConverted(lease: Lease, grant: Grant, sentAt: number): void {
  const l = lease as KeptLease;
  l.keeper.converted(l, grant, sentAt);
}

export interface LeaseKeeperEvents {
  lost: [lease: Lease, reason: LostReason];
  renewed: [lease: Lease, expiresInMs: number];
}

/**
 * Keeps leases renewed. One per application is enough; timers are unref'd,
 * so a keeper never keeps the process alive. Listeners of `lost` (and
 * `onLost` callbacks) may call `stop()`, `release()` or `close()`.
 */
export class LeaseKeeper extends EventEmitter<LeaseKeeperEvents> {
  private readonly leases = new Set<KeptLease>();
  /** Renew after this fraction of the TTL (default 1/3). */
  constructor(private readonly fraction = 1 / 3) {
    super();
  }

  /**
   * Starts keeping a granted lock's lease; `options.signal` stops keeping it
   * when aborted (like `stop()`: the lock stays until released or expired).
   */
  keep(client: PathLock, grant: Grant, options: { onLost?: (lease: Lease) => void; signal?: AbortSignal } = {}): Lease {
    const lease = new KeptLease(this, client, grant, options.onLost);
    if (options.signal?.aborted) return lease;
    options.signal?.addEventListener('abort', () => void this.stop(lease), { once: true });
    this.leases.add(lease);
    this.schedule(lease, grant.ttlMs * this.fraction);
    this.armEnd(lease);
    return lease;
  }

  /**
   * @internal The kept lock was converted (LockGuard.convert, sent at
   * `sentAt`): the same id and token, its new grant's TTL and lease end.
   */
  converted(l: KeptLease, grant: Grant, sentAt: number): void {
    l.grant = grant;
    if (l.stopped || l.lost) return;
    l.localEnd = sentAt + grant.expiresInMs;
    this.armEnd(l);
    if (!l.inflight) this.schedule(l, grant.ttlMs * this.fraction); // a renewal in flight schedules the next itself
  }

  /** The leases being kept. */
  get size(): number {
    return this.leases.size;
  }

  async stop(lease: Lease): Promise<void> {
    const l = lease as KeptLease;
    l.stopped = true;
    clearTimeout(l.timer);
    clearTimeout(l.endTimer);
    this.leases.delete(l);
    if (l.inflight) await l.inflight;
  }

  /** Stops keeping every lease. */
  async close(): Promise<void> {
    await Promise.all([...this.leases].map((l) => this.stop(l)));
  }

  private schedule(l: KeptLease, delayMs: number): void {
    clearTimeout(l.timer);
    l.timer = setTimeout(() => {
      l.inflight = this.renew(l).finally(() => (l.inflight = undefined));
    }, Math.max(0, delayMs));
    l.timer.unref();
  }

  private armEnd(l: KeptLease): void {
    clearTimeout(l.endTimer);
    l.endTimer = setTimeout(() => {
      if (!l.stopped && !l.lost && Date.now() >= l.localEnd) this.markLost(l, 'expired');
      else if (!l.stopped && !l.lost) this.armEnd(l);
    }, Math.max(0, l.localEnd - Date.now()) + 1);
    l.endTimer.unref();
  }

  private async renew(l: KeptLease): Promise<void> {
    if (l.stopped || l.lost) return;
    const sent = Date.now();
    let outcome: 'renewed' | 'missing' | 'error' = 'error';
    try {
      const r = await l.client.renew(l.grant.id, l.grant.token);
      if (r.renewed) {
        l.localEnd = sent + r.expiresInMs;
        outcome = 'renewed';
      } else outcome = 'missing';
    } catch (e) {
      l.lastError = e;
    }
    if (l.stopped || l.lost) return;
    if (outcome === 'missing') {
      l.inflight = undefined; // the listener may stop() without waiting for itself
      this.markLost(l, 'missing');
      return;
    }
    if (outcome === 'renewed') {
      this.armEnd(l);
      this.emit('renewed', l, l.localEnd - sent);
      this.schedule(l, l.grant.ttlMs * this.fraction);
    } else {
      // Try again soon, while the lease may still be alive.
      const left = l.localEnd - Date.now();
      if (left <= 0) {
        l.inflight = undefined;
        this.markLost(l, 'expired');
      } else this.schedule(l, Math.min(left / 2, 1000));
    }
  }

  private markLost(l: KeptLease, reason: LostReason): void {
    if (l.lost || l.stopped) return;
    l.lost = true;
    l.lostReason = reason;
    clearTimeout(l.timer);
    clearTimeout(l.endTimer);
    this.leases.delete(l);
    try {
      l.onLost?.(l);
    } finally {
      try {
        this.emit('lost', l, reason);
      } finally {
        l.lostController.abort(new LeaseLostError(l.grant.id, reason));
      }
    }
  }
}
