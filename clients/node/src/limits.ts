// Limits per namespace (protocol 4.3, docs/lua-protocol.md's contract:
// set_limits, limits_ro, acquire's default_limits and its over_limit reply).
// A namespace's own limits live in the library (set_limits); the default for
// every namespace is the plain string key pl:limits (the contract's
// default_limits_key), which a client reads at most every
// default_limits_refresh_ms and sends with each acquire, as the C++ engine
// does (src/redis/limits.cpp).
import type { Cluster, Redis } from 'ioredis';

import { BackendError, InvalidRequestError } from './errors';
import { Contract, protocolAtLeast } from './library';

/**
 * The most live locks, places in line and locks per owner a namespace may
 * have; `null` or absent: no such limit. Only live data counts: a lock whose
 * lease ended, or a place whose reservation ended, no longer does.
 */
export interface Limits {
  locks?: number | null;
  places?: number | null;
  ownerLocks?: number | null;
}

/** Which limit refused a request. */
export type LimitKind = 'locks' | 'places' | 'owner_locks';

/**
 * A request refused by a limit: the limit, its value and what the namespace
 * (or the owner) has now, at least `max`. Nothing was taken, no place kept.
 */
export interface LimitRefusal {
  limit: LimitKind;
  max: number;
  count: number;
}

/** A namespace's limits and its use of them (`PathLock.limits()`). */
export interface LimitsStatus {
  /** The default for every namespace (pl:limits). */
  defaults: Required<Limits>;
  /** The namespace's own, replacing the default whole; null: none. */
  own: Required<Limits> | null;
  /** What is enforced: `own`, else `defaults`. */
  effective: Required<Limits>;
  /** Live locks now. */
  locks: number;
  /** Places in line now. */
  places: number;
  /** The live locks of the owner that has the most: `owner` ('' when none; on a tie the first by name). */
  ownerLocks: number;
  owner: string;
}

/** The largest value of a limit (the contract's `limit_max`). */
export const MAX_LIMIT = 1_000_000_000;
/** Where the default limits live, and how long a reading of them is used (protocol 4.3's values). */
export const DEFAULT_LIMITS_KEY = 'pl:limits';
export const DEFAULT_LIMITS_REFRESH_MS = 5000;

const FIELDS = ['locks', 'places', 'ownerLocks'] as const;

/** The text form the library reads: "LOCKS PLACES OWNER_LOCKS", each digits or "-". InvalidRequestError when out of range. */
export function limitsText(l: Limits): string {
  return FIELDS.map((k) => {
    const v = l[k];
    if (v === undefined || v === null) return '-';
    if (!Number.isSafeInteger(v) || v < 0 || v > MAX_LIMIT)
      throw new InvalidRequestError(`limit ${k} must be a whole number from 0 to ${MAX_LIMIT}, got ${v}`);
    return String(v);
  }).join(' ');
}

/** Reads the text form; undefined when it is not one. */
export function parseLimits(text: string): Required<Limits> | undefined {
  const words = text.split(' ');
  if (words.length !== 3) return undefined;
  const out: Required<Limits> = { locks: null, places: null, ownerLocks: null };
  for (let i = 0; i < 3; i++) {
    if (words[i] === '-') continue;
    if (!/^\d{1,10}$/.test(words[i]) || Number(words[i]) > MAX_LIMIT) return undefined;
    out[FIELDS[i]] = Number(words[i]);
  }
  return out;
}

/** An acquire's `over_limit` reply as its refusal. */
export function overLimitOf(r: unknown[]): LimitRefusal {
  const limit = String(r[1]);
  if (limit !== 'locks' && limit !== 'places' && limit !== 'owner_locks')
    throw new BackendError(`redis: acquire: over_limit names an unknown limit '${limit}'`);
  return { limit, max: Number(r[2]), count: Number(r[3]) };
}

/** limits_ro's reply `{limits, own, locks, places, owner_locks, owner}` with the default's text. */
export function limitsStatusOf(r: unknown[], defaultText: string): LimitsStatus {
  if (r[0] !== 'limits') throw new BackendError(`redis: limits_ro: unexpected reply ${JSON.stringify(r)}`);
  const defaults = parseLimits(defaultText) ?? { locks: null, places: null, ownerLocks: null };
  const own = String(r[1]) === '' ? null : parseLimits(String(r[1])) ?? null;
  return {
    defaults, own, effective: own ?? defaults,
    locks: Number(r[2]), places: Number(r[3]), ownerLocks: Number(r[4]), owner: String(r[5]),
  };
}

function isReplyError(e: unknown): e is Error {
  return e instanceof Error && e.name === 'ReplyError';
}

/**
 * The default limits as a client last read them (shared by a client and
 * its forNamespace() clients): one read at a time, at most every
 * default_limits_refresh_ms. A library older than protocol 4.3 takes none,
 * so nothing is read or sent.
 */
export class DefaultLimits {
  private text = '';
  private readAt = -Infinity;
  private reading?: Promise<string>;
  private warned = false;
  private unreachable = false;

  constructor(private readonly warn: (message: string) => void) {}

  /** The text to send with an acquire ('' when none); read again when stale (or `fresh`). */
  get(redis: Redis | Cluster, contract: Contract, fresh = false): Promise<string> {
    if (!protocolAtLeast(contract, '4.3')) return Promise.resolve('');
    if (!fresh && performance.now() - this.readAt < refreshMs(contract)) return Promise.resolve(this.text);
    if (!this.reading) {
      this.reading = this.read(redis, keyOf(contract)).finally(() => (this.reading = undefined));
    }
    return this.reading;
  }

  // GET of the key: an error reply (NOPERM: the user may not read it)
  // counts as none, with one warning; so does a value this client cannot
  // read (another tool's). Kept for the refresh period either way.
  private async read(redis: Redis | Cluster, key: string): Promise<string> {
    let v: unknown;
    try {
      v = await redis.call('GET', key);
    } catch (e) {
      if (!isReplyError(e)) {
        // The key's node cannot be reached (a Cluster node down or cut off,
        // which the namespace's need not be): the last text read stays, read
        // again after the refresh period; the acquire goes on (a limit
        // protects memory, not a lock), as in every pathlock client.
        if (!this.unreachable)
          this.warn(`could not read the default limits (${key}): ${e instanceof Error ? e.message : e}; the last default read stays`);
        this.unreachable = true;
        this.readAt = performance.now();
        return this.text;
      }
      if (!this.warned)
        this.warn(`this user may not GET ${key} (${e.message}); no default limits apply to its requests. Grant +get on ~pl:*`);
      this.warned = true;
      v = null;
    }
    const text = v === null || v === undefined ? '' : String(v);
    this.text = parseLimits(text) ? text : '';
    this.readAt = performance.now();
    this.unreachable = false;
    return this.text;
  }

  /** Sets the default on the server (SET, or DEL for no limit at all) and here. */
  async set(redis: Redis | Cluster, contract: Contract, limits: Limits): Promise<void> {
    const text = limitsText(limits);
    const key = keyOf(contract);
    try {
      if (text === '- - -') await redis.call('DEL', key);
      else await redis.call('SET', key, text);
    } catch (e) {
      throw new BackendError(`redis: SET ${key}: ${e instanceof Error ? e.message : e}`, { cause: e, mayHaveRun: !isReplyError(e) });
    }
    this.text = text === '- - -' ? '' : text;
    this.readAt = performance.now();
  }

  /** @internal For tests: the next get() reads the key again, as after the refresh period. */
  expire(): void {
    this.readAt = -Infinity;
  }
}

function keyOf(c: Contract): string {
  const k = (c.limits as Record<string, unknown>).default_limits_key;
  return typeof k === 'string' && k !== '' ? k : DEFAULT_LIMITS_KEY;
}

function refreshMs(c: Contract): number {
  const ms = Number((c.limits as Record<string, unknown>).default_limits_refresh_ms);
  return Number.isFinite(ms) && ms > 0 ? ms : DEFAULT_LIMITS_REFRESH_MS;
}
