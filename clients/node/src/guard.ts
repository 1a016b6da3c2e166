// The guard of a held lock: released by `release()` or `await using`, its
// keeper (if any) stopped first.
import type { PathLock } from './client';
import type { Lease } from './keeper';
import type { Grant } from './types';

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
