// The client's facade: one namespace on one Redis deployment (standalone,
// Sentinel or Cluster, through ioredis), every operation one call of a
// function of the pathlock Functions library (docs/lua-protocol.md). The
// work is done by the modules README.md lists: validation, acquire and the
// waiting policy, the codec, the library on the server, the topology.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Redis from 'ioredis';

import { anySignal, untilAborted } from './abort';
import { AcquireHost, AcquireIds, AcquirePlan, firstAttempt, planAcquire, planConvert, randomIds, runAcquire } from './acquire';
import { ServerClock } from './clock';
import { argsByName, blockerRows, keysOf, lockRows, waiterRows } from './codec';
import { BackendError, InvalidRequestError, LockRefusedError, NotHolderError, OverLimitError } from './errors';
import { LibraryDescription, LibraryLink } from './functions';
import { LockGuard } from './guard';
import { Contract, LibraryInfo, parseLibrary, rolesIn } from './library';
import { DefaultLimits, Limits, LimitsStatus, limitsStatusOf, limitsText } from './limits';
import { normalizePath } from './paths';
import { RedisClient, connect, wakeNodeOf } from './topology';
import type {
  AcquireOptions, AcquireResult, Blocker, BlockersOptions, CallOptions, ConvertOptions, ConvertResult, Grant, ListPage, LockInfo, LockOptions,
  PathLockOptions, Waiter,
} from './types';
import { checkCursor, checkFunctionPrefix, checkLockId, checkNamespace, pathsFor, wholeMs } from './validation';
import { RECHECK_MS } from './waiting';
import { WakeHub } from './wake';

/**
 * The default matrix's Functions library shipped in this package (also
 * `require.resolve('pathlock/library.lua')`): pass it as `libraryFile`.
 */
export const defaultLibraryFile: string = join(__dirname, '..', '..', 'library', 'pathlock_library.lua');

// An acquire's or a conversion's grant, or the error of its refusal.
function grantOf(r: AcquireResult, notHolder: () => string): Grant {
  if (r.granted) return r.grant;
  if (r.notHolder) throw new NotHolderError(notHolder());
  if (r.overLimit) throw new OverLimitError(r.overLimit);
  throw new LockRefusedError(r.conflict, r.wouldDeadlock);
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
    link: LibraryLink;
    wake: WakeHub;
    /** The server's clock, for deadlines. */
    clock: ServerClock;
    /** The default limits as last read. */
    defaults: DefaultLimits;
  };
  private readonly subscriberFactory?: () => Redis;
  private recheckOverride?: number;
  private readonly host: AcquireHost;

  constructor(options: PathLockOptions, shared?: PathLock['shared']) {
    this.namespace = checkNamespace(options.namespace);
    const { redis, owned } = connect(options.redis, options.redisOptions);
    this.redis = redis;
    this.ownsRedis = owned;
    this.subscriberFactory = options.subscriber;
    if (shared) this.shared = shared;
    else {
      const warn = options.onWarning ?? ((m: string) => process.emitWarning(m, 'PathLockWarning'));
      let lib: LibraryInfo | undefined;
      let text = options.library;
      if (options.libraryFile !== undefined) text = readFileSync(options.libraryFile, 'utf8');
      if (text !== undefined) lib = parseLibrary(text);
      else if (options.functionPrefix !== undefined) {
        const prefix = checkFunctionPrefix(options.functionPrefix);
        lib = { name: 'pathlock_' + prefix.slice(3, -1), prefix };
      }
      const link = new LibraryLink(this.redis, lib, options.fingerprint);
      this.shared = { link, wake: new WakeHub(), clock: new ServerClock(), defaults: new DefaultLimits(warn) };
    }
    this.host = {
      redis: this.redis,
      namespace: this.namespace,
      clock: this.shared.clock,
      defaults: this.shared.defaults,
      contract: () => this.contract(),
      fcall: (name, args) => this.fcall(name, args),
      release: (id, token) => this.release(id, token),
      leave: (waiterId) => this.leave(waiterId),
      listen: (onMessage) => this.subscribeWake(onMessage),
      recheckMs: () => this.recheckOverride,
    };
  }

  /**
   * @internal The longest sleep of a wait between attempts (the contract's
   * `waiting.recheck_ms`, RECHECK_MS before protocol 4.4). A test that sets
   * it beyond its wait sees grants only through wake-ups.
   */
  get recheckMs(): number {
    return this.recheckOverride ?? RECHECK_MS;
  }
  set recheckMs(ms: number) {
    this.recheckOverride = ms;
  }

  /** A client of another namespace sharing this one's connection and library. */
  forNamespace(namespace: string): PathLock {
    return new PathLock({ redis: this.redis, namespace, subscriber: this.subscriberFactory }, this.shared);
  }

  /**
   * Closes the wake-up connections (shared with the clients of
   * `forNamespace()`), and the connection when this client opened it.
   */
  async close(): Promise<void> {
    await this.shared.wake.close();
    if (this.ownsRedis) await this.redis.quit().catch(() => this.redis.disconnect());
  }

  // ---- the library (src/functions.ts) ----------------------------------------

  /** The library this client calls (loading or discovering it first if needed). */
  library(): Promise<LibraryInfo> {
    return this.shared.link.library();
  }

  /**
   * Which library and matrix this is: the library's `info` function when it
   * has one (undefined fields when it has none).
   */
  describe(lib?: LibraryInfo): Promise<LibraryDescription> {
    return this.shared.link.describe(lib);
  }

  /**
   * What the library says about itself (its function `contract`, protocol
   * 4.2): operations and roles, limits, keys, functions, replies, errors,
   * and from 4.4 the waiting numbers. Read once per client (shared with its
   * forNamespace() clients), loading the library first where it is missing
   * and its text is known. A library older than 4.2 has none: BackendError
   * naming the protocol.
   */
  contract(): Promise<Contract> {
    return this.shared.link.contract();
  }

  /** Loads the library on every master (FUNCTION LOAD without REPLACE; "already exists" is success). */
  load(): Promise<void> {
    return this.shared.link.load();
  }

  private fcall(name: string, args: string[], readOnly = false): Promise<unknown[]> {
    return this.shared.link.fcall(this.namespace, name, args, readOnly);
  }

  // ---- requests ------------------------------------------------------------

  /** The roles of an operation in role order (from the contract); undefined for an unknown operation. */
  async rolesOf(op: string): Promise<string[] | undefined> {
    return rolesIn(await this.contract(), op);
  }

  /**
   * Acquires, waiting up to `waitMs` for a refused request. Answers a
   * refusal as data; throws InvalidRequestError for bad input, BackendError
   * when Redis fails, and the signal's reason when aborted.
   */
  tryAcquire(o: AcquireOptions): Promise<AcquireResult> {
    return this.runPlan(o, (timed) => planAcquire(this.host, timed, randomIds()));
  }

  // Plans a request and sends its attempts; with o.timeoutMs, its caller
  // gives up then (an AbortSignal.timeout, and each attempt's deadline_ms).
  private async runPlan<O extends ConvertOptions>(o: O, plan: (o: O) => Promise<AcquirePlan>): Promise<AcquireResult> {
    if (o.timeoutMs === undefined) return runAcquire(this.host, o, await plan(o), undefined);
    wholeMs('timeoutMs', o.timeoutMs, 1, Number.MAX_SAFE_INTEGER);
    const timeout = AbortSignal.timeout(o.timeoutMs);
    const timed = { ...o, signal: o.signal ? anySignal([o.signal, timeout]) : timeout };
    const giveUpAt = performance.now() + o.timeoutMs;
    return runAcquire(this.host, timed, await plan(timed), giveUpAt);
  }

  /**
   * @internal The keys and the arguments of the first attempt an acquire
   * would send, with these ids, as if no time had passed (the driver's
   * `protocol` command): built by the code tryAcquire runs.
   */
  async firstAcquireCall(o: AcquireOptions, ids: AcquireIds): Promise<{ keys: string[]; args: string[] }> {
    return firstAttempt(await planAcquire(this.host, o, ids), this.namespace);
  }

  /**
   * Acquires or throws: LockRefusedError (with the conflict), NotHolderError
   * for a failed reentry, OverLimitError when a limit of the namespace refuses it.
   */
  async acquire(o: AcquireOptions): Promise<Grant> {
    return grantOf(await this.tryAcquire(o), () => `no live lock ${o.reenter?.id} with that token to re-enter`);
  }

  /**
   * Converts the held lock `lock` (its id and token: a Grant will do) to a
   * new operation and paths in one step, or leaves it as it is
   * (docs/design.md#conversion): one call of the library's `convert` per
   * attempt, judged as an acquire of the new operation and paths beside
   * every other lock. Granted: the lock's own id and token, a new higher
   * fence, the lease now + ttlMs. Refused (`wouldDeadlock` when the refusing
   * lock waits to convert to something this lock refuses), `notHolder`,
   * `overLimit`, an abort or an error: the lock as it was. Waits as
   * tryAcquire waits, holding the lock meanwhile; a grant seen after an
   * abort is kept and answered, never undone.
   */
  tryConvert(lock: { id: string; token: string }, o: ConvertOptions): Promise<ConvertResult> {
    return this.runPlan(o, (timed) => planConvert(this.host, lock, timed, randomIds()));
  }

  /**
   * Converts or throws: LockRefusedError (with the conflict, and
   * `wouldDeadlock`), NotHolderError when no live lock has this id and
   * token, OverLimitError when a limit of the namespace refuses its place in line.
   */
  async convert(lock: { id: string; token: string }, o: ConvertOptions): Promise<Grant> {
    return grantOf(await this.tryConvert(lock, o), () => `no live lock ${lock.id} with that token to convert`);
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
    const r = await this.fcall('list', [prefix, limit, checkCursor(o.after ?? '')]);
    const next = r[1] === '' || r[1] === null || r[1] === undefined ? null : String(r[1]);
    return { locks: lockRows(r), next };
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

  /**
   * What would refuse a request for `op` on these paths now (read-only);
   * with `converts`, what would refuse a conversion of that lock (its dry
   * run, since 1.1.0: BlockersOptions). BackendError for `converts` from a
   * library older than protocol 4.6.
   */
  async blockers(o: BlockersOptions): Promise<{ blockers: Blocker[]; truncated: boolean }> {
    const contract = await this.contract();
    const paths = pathsFor(contract, o);
    const limit = wholeMs('limit', o.limit ?? 1000, 1, contract.limits.blockers_limit);
    const values: Record<string, string> = { op: o.op, limit };
    if (o.converts !== undefined) {
      values.converts = checkLockId('converts', o.converts, contract.limits);
      values.fair = o.fair === false ? '0' : '1';
    } else if (o.fair === false) throw new InvalidRequestError('fair: false goes with converts (the dry run of a conversion)');
    const { args, at } = argsByName(contract, 'blockers', values, paths);
    if (values.converts !== undefined && at.converts === undefined)
      throw new BackendError(`the library (protocol ${contract.protocol}) has no dry run of a conversion: blockers' converts needs protocol 4.6`);
    const r = await this.fcall('blockers', args, true);
    return { blockers: blockerRows(r), truncated: Number(r[1]) === 1 };
  }

  /** The waiting requests with a place in line at or inside `prefix`, oldest first (read-only). */
  async waiters(o: { prefix?: string; limit?: number } = {}): Promise<Waiter[]> {
    const prefix = normalizePath(o.prefix ?? '/');
    const limit = wholeMs('limit', o.limit ?? 1000, 1, (await this.contract()).limits.waiters_limit);
    return waiterRows(await this.fcall('waiters', [prefix, limit], true));
  }

  // ---- wake-ups --------------------------------------------------------------

  /** Open wake-up subscription connections of this client and its forNamespace() clients. */
  get wakeConnections(): number {
    return this.shared.wake.connections;
  }

  // Subscribes to the namespace's wake channel for a waiting acquire; returns the unsubscribe.
  private async subscribeWake(onMessage: (payload: string) => void): Promise<() => void> {
    const c = await this.contract();
    const wakeKey = keysOf(c, this.namespace)[c.keys.suffixes.indexOf('wake')];
    return this.shared.wake.attach(wakeKey, () => wakeNodeOf(this.redis, this.namespace, this.subscriberFactory), onMessage);
  }
}
