// One acquire: the request checked (src/validation.ts), its arguments built
// by name from the contract (src/codec.ts), each attempt sent (with its
// deadline_ms on the server's clock, once more after a `late` reply, again
// after a lost reply only with an idempotency key), and a refused request
// that waits handed to the waiting policy (src/waiting.ts). A conversion
// (docs/lua-protocol.md#convert) is the same with the library's `convert`:
// acquire's arguments with the lock's proof, and a grant never given back.
import { randomFillSync } from 'node:crypto';

import { abortReason, untilAborted } from './abort';
import { AcquireArgs, AcquireFunction, AcquireValues, acquireResult, keysOf } from './codec';
import type { ServerClock } from './clock';
import { BackendError } from './errors';
import type { Contract, ContractLimits } from './library';
import type { DefaultLimits } from './limits';
import type { RedisClient } from './topology';
import type { AcquireOptions, AcquireResult, ConvertOptions } from './types';
import { CheckedRequest, checkAcquire, checkConvert, pathsFor } from './validation';
import { reserveMs, waitFor, waitingOf } from './waiting';

/** What an acquire needs of its client. */
export interface AcquireHost {
  readonly redis: RedisClient;
  readonly namespace: string;
  readonly clock: ServerClock;
  readonly defaults: DefaultLimits;
  contract(): Promise<Contract>;
  fcall(name: string, args: string[]): Promise<unknown[]>;
  release(id: string, token: string): Promise<boolean>;
  leave(waiterId: string): Promise<boolean>;
  /** Subscribes to the namespace's wake-ups; resolves to the unsubscribe. */
  listen(onMessage: (payload: string) => void): Promise<() => void>;
  /** A test's longest sleep between attempts, instead of the contract's recheck_ms. */
  recheckMs(): number | undefined;
}

/** The ids an acquire sends: its new lock's id and token, and its place in line's id (used when it takes one). */
export interface AcquireIds {
  newId: string;
  newToken: string;
  waiterId: string;
}

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

export function randomIds(): AcquireIds {
  return { newId: randomHex(12), newToken: randomHex(16), waiterId: 'w' + randomHex(12) };
}

/** An acquire (or a conversion) ready to send: its arguments (every optional group) and how it waits. */
export interface AcquirePlan {
  contract: Contract;
  /** The function called, with its arguments. */
  args: AcquireArgs;
  paths: string[];
  ttlMs: number;
  /** The wait asked for (0 for a reentry, which never waits). */
  waitMs: number;
  /** Has it a place in line (fair and waiting)? */
  inLine: boolean;
  waiterId: string;
}

/**
 * Checks an acquire and builds its arguments by name: the same for a real
 * acquire (random ids) and the driver's `protocol` command (fixed ids).
 */
export function planAcquire(host: AcquireHost, o: AcquireOptions, ids: AcquireIds): Promise<AcquirePlan> {
  return plan(host, o, {
    fn: 'acquire',
    check: (limits) => {
      const checked = checkAcquire(o, limits);
      return o.reenter ? { ...checked, waitMs: 0 } : checked; // a reentry never waits, takes no place in line
    },
    proof: {
      owner: o.owner,
      new_id: ids.newId,
      new_token: ids.newToken,
      reenter_id: o.reenter?.id ?? '',
      reenter_token: o.reenter?.token ?? '',
    },
    waiterId: ids.waiterId,
  });
}

/**
 * Checks a conversion of `lock` and builds its arguments: acquire's, by the
 * same names, with no owner, id or token of its own and the lock's proof
 * in reenter_id and reenter_token (docs/lua-protocol.md#convert).
 */
export function planConvert(
  host: AcquireHost,
  lock: { id: string; token: string },
  o: ConvertOptions,
  ids: AcquireIds,
): Promise<AcquirePlan> {
  return plan(host, o, {
    fn: 'convert',
    check: (limits) => checkConvert(lock, o, limits),
    proof: { owner: '', new_id: '', new_token: '', reenter_id: lock.id, reenter_token: lock.token },
    waiterId: ids.waiterId,
  });
}

// What an acquire and a conversion plan differently: the function, the
// checks, whose request it is, and the waiter id to take a place with.
interface PlanOf {
  fn: AcquireFunction;
  check(limits: ContractLimits): CheckedRequest;
  proof: Pick<AcquireValues, 'owner' | 'new_id' | 'new_token' | 'reenter_id' | 'reenter_token'>;
  waiterId: string;
}

// A request checked and its arguments built by name (every optional group).
async function plan(host: AcquireHost, o: ConvertOptions, of: PlanOf): Promise<AcquirePlan> {
  // The first call reads the contract: the signal ends that wait too.
  const contract = await untilAborted(host.contract(), o.signal);
  const { ttlMs, ttl, waitMs } = of.check(contract.limits);
  const fair = o.fair ?? true;
  const paths = pathsFor(contract, o);
  // The default limits (src/limits.ts), read once per request ('' for none).
  const defaults = await untilAborted(host.defaults.get(host.redis, contract), o.signal);
  if (o.signal?.aborted) throw abortReason(o.signal);
  const inLine = waitMs > 0 && fair;
  const waiterId = inLine ? of.waiterId : '';
  const args = new AcquireArgs(
    contract,
    {
      ...of.proof,
      op: o.op,
      ttl_ms: ttl,
      idempotency_key: o.idempotencyKey ?? '',
      fair: fair ? '1' : '0',
      waiter_id: waiterId,
      reserve_ms: '0',
      deadline_ms: '',
      default_limits: defaults,
    },
    paths,
    of.fn,
  );
  return { contract, args, paths, ttlMs, waitMs, inLine, waiterId };
}

/** The keys and the arguments of a plan's first attempt, as if no time had passed (the driver's `protocol`). */
export function firstAttempt(plan: AcquirePlan, namespace: string): { keys: string[]; args: string[] } {
  const reserve = reserveMs(plan.waitMs, plan.inLine, waitingOf(plan.contract));
  return { keys: keysOf(plan.contract, namespace, plan.args.fn), args: plan.args.attempt(reserve, '') };
}

/**
 * Sends a plan's attempts; giveUpAt (performance.now() clock), when set, is
 * each attempt's deadline_ms. A grant that comes after an abort is released
 * for an acquire; a conversion's is kept (the old operation may no longer
 * fit beside what was granted since): answered when the wait loop sees it,
 * left as it is when the abort already rejected the call in flight.
 */
export async function runAcquire(host: AcquireHost, o: ConvertOptions, plan: AcquirePlan, giveUpAt: number | undefined): Promise<AcquireResult> {
  const { signal } = o;
  const { fn } = plan.args;
  const giveBack =
    fn === 'acquire' ? (id: string, token: string) => void host.release(id, token).catch(() => undefined) : undefined;
  const releaseLate = (r: unknown[]) => {
    if (r[0] === 'granted') giveBack?.(String(r[1]), String(r[2]));
  };
  const attempt = async (reserve: number): Promise<AcquireResult> => {
    for (let tries = 0; ; tries++) {
      try {
        // In flight too, the signal ends the wait for the answer; a grant
        // that arrives after it is given back (an acquire's).
        const r = await untilAborted(sendAcquire(host, plan.args, reserve, giveUpAt), signal, releaseLate);
        return acquireResult(r, plan.ttlMs, fn);
      } catch (e) {
        // Only an acquire (a conversion) with an idempotency key may be sent
        // again after its reply was lost: the retry gets the lock the first made.
        if (e instanceof BackendError && e.mayHaveRun && o.idempotencyKey && tries < 2) continue;
        throw e;
      }
    }
  };
  const deadline = Date.now() + plan.waitMs;
  if (plan.waitMs === 0) return attempt(0);
  const numbers = waitingOf(plan.contract);
  return waitFor(
    { paths: plan.paths, deadline, inLine: plan.inLine, signal, numbers, recheckMs: host.recheckMs() ?? numbers.recheck_ms },
    {
      attempt,
      listen: (onMessage) => host.listen(onMessage),
      leave: () => host.leave(plan.waiterId),
      giveBack: giveBack && ((g) => giveBack(g.id, g.token)),
    },
  );
}

// One acquire (convert) call with this reserve_ms; with giveUpAt, its
// deadline_ms. A `late` reply (the server's clock ran ahead of the
// estimate) changed nothing: sent once more with the clock it names, then
// a BackendError.
async function sendAcquire(host: AcquireHost, args: AcquireArgs, reserve: number, giveUpAt: number | undefined): Promise<unknown[]> {
  if (giveUpAt === undefined) return host.fcall(args.fn, args.attempt(reserve, ''));
  for (let tries = 0; ; tries++) {
    const r = await host.fcall(args.fn, args.attempt(reserve, await host.clock.deadlineArg(host.redis, giveUpAt)));
    if (r[0] !== 'late') return r;
    host.clock.set(Number(r[1]));
    if (tries > 0)
      throw new BackendError(
        `redis: ${args.fn} reached the server after its deadline twice (the server's clock runs ahead); nothing was changed`,
        { mayHaveRun: false },
      );
  }
}
