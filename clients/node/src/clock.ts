// The server's clock, for an acquire's deadline_ms
// (docs/lua-protocol.md#deadlines): TIME read once and then estimated from
// performance.now(), read again after 30 s or when a `late` reply names the
// server's clock; none where an ACL forbids TIME (protocol 4.1's behaviour).
import { BackendError } from './errors';
import { RedisClient, isReplyError } from './topology';

// How old a reading of the server's clock may get before it is read again.
const CLOCK_REFRESH_MS = 30_000;

export class ServerClock {
  /** The server's clock as last read: [TIME in ms, performance.now() then]; null: TIME not allowed. */
  private reading?: [number, number] | null;

  /** deadline_ms: the server's clock at `giveUpAt` (a performance.now() time); '' where TIME is not allowed. */
  async deadlineArg(redis: RedisClient, giveUpAt: number): Promise<string> {
    let c = this.reading;
    if (c === undefined || (c !== null && performance.now() - c[1] >= CLOCK_REFRESH_MS)) {
      try {
        const t = (await redis.call('TIME')) as string[];
        c = [Number(t[0]) * 1000 + Math.floor(Number(t[1]) / 1000), performance.now()];
      } catch (e) {
        if (!isReplyError(e)) throw new BackendError(`redis: TIME: ${e instanceof Error ? e.message : e}`, { cause: e, mayHaveRun: false });
        c = null;
      }
      this.reading = c;
    }
    if (c === null) return '';
    return String(Math.floor(c[0] + (giveUpAt - c[1])));
  }

  /** A `late` reply's clock: the server's now (ms). */
  set(serverNowMs: number): void {
    this.reading = [serverNowMs, performance.now()];
  }
}
