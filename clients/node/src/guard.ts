// The guard of a held lock: released by `release()` or `await using`, its
// keeper (if any) stopped first; converted by `convert()`, its keeper (if
// any) keeping the converted lock.
import type { PathLock } from './client';
import { Lease, leaseConverted } from './keeper';
import type { ConvertOptions, Grant } from './types';

/**
 * A held lock that releases itself: call `release()` in `finally`, or
 * declare it with `await using` (Symbol.asyncDispose). Releasing twice is
 * harmless; the keeper (if any) stops before the release, so a released
 * lock is never renewed.
 */
export class LockGuard {
  /** The keeper's lease, when one keeps it. */
  lease?: Lease;
  private released?: Promise<boolean>;
  private current: Grant;
  constructor(
    private readonly client: PathLock,
    grant: Grant,
  ) {
    this.current = grant;
  }
  /** The lock as granted, or as last converted (the same id and token, its new fence). */
  get grant(): Grant {
    return this.current;
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
  /**
   * Converts the lock (PathLock.convert with this guard's grant): the
   * guard's grant becomes the new one (its fence too), its keeper keeps
   * renewing it with the new TTL. Refused, not held or aborted: throws as
   * PathLock.convert does, the guard and its lock as they were.
   */
  async convert(o: ConvertOptions): Promise<Grant> {
    const sentAt = Date.now();
    const grant = await this.client.convert(this.current, o);
    this.current = grant;
    if (this.lease) leaseConverted(this.lease, grant, sentAt);
    return grant;
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
