// Topology and connection: the ioredis client the application gives (or
// the one a URL opens), standalone, Sentinel or Cluster; the rules a given
// client must follow (no resend), a call's watch on its connection closing,
// the masters a library is loaded on, and where a namespace's wake-ups are
// subscribed (the master serving its slot on a Cluster). C++: src/redis's
// connection, cluster, sentinel and slot.
import Redis, { Cluster, RedisOptions } from 'ioredis';
import calculateSlot = require('cluster-key-slot');

import { BackendError, InvalidRequestError } from './errors';
import type { WakeNode } from './wake';

export type RedisClient = Redis | Cluster;

/**
 * Is this ioredis client a Cluster? Read from ioredis's `isCluster` flag, so
 * that a client made by the application's own copy of ioredis is recognised.
 */
export function isCluster(r: RedisClient): r is Cluster {
  return (r as { isCluster?: boolean }).isCluster === true;
}

/**
 * A lock call whose reply was lost may have run, so the ioredis client must
 * never send it again by itself: not on reconnecting
 * (`autoResendUnfulfilledCommands: false`; for a Cluster in `redisOptions`),
 * and for a Cluster not after a node's connection closed under it either
 * (`retryDelayOnFailover: 0`: ioredis otherwise sends the command again
 * 100 ms later, issue 41).
 */
export function checkNoResend(r: RedisClient): void {
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

/** The client's connection: the given one (checked), or one opened for a URL (`owned`: this client closes it). */
export function connect(redis: RedisClient | string, options?: RedisOptions): { redis: RedisClient; owned: boolean } {
  if (typeof redis === 'string')
    return { redis: new Redis(redis, { ...options, autoResendUnfulfilledCommands: false, lazyConnect: false }), owned: true };
  checkNoResend(redis);
  return { redis, owned: false };
}

export function isReplyError(e: unknown): e is Error {
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
export function untilClosed<T>(redis: RedisClient, call: () => Promise<T>): Promise<T> {
  if (isCluster(redis) || redis.status !== 'ready') return call();
  return new Promise<T>((resolve, reject) => {
    const onClose = () => reject(new Error('the connection closed before the reply arrived'));
    redis.once('close', onClose);
    call().then(resolve, reject).finally(() => redis.removeListener('close', onClose));
  });
}

/** The masters (a Cluster's, or the one connection): where a library is loaded. */
export function masters(redis: RedisClient): Redis[] {
  return isCluster(redis) ? redis.nodes('master') : [redis];
}

/** Waits for a Cluster to know its nodes (a no-op otherwise). */
export async function clusterReady(redis: RedisClient): Promise<void> {
  if (isCluster(redis) && redis.status !== 'ready') await redis.call('PING');
}

/**
 * Where a namespace's wake-ups are subscribed: the one subscriber of a
 * standalone or Sentinel client (or the `subscriber` factory's), or the
 * master serving the namespace's slot.
 */
export async function wakeNodeOf(redis: RedisClient, namespace: string, factory?: () => Redis): Promise<WakeNode> {
  if (factory) return { key: 'subscriber', open: () => factory() };
  if (!isCluster(redis)) return { key: 'redis', open: () => redis.duplicate() };
  const node = await slotMaster(redis, namespace);
  return { key: `${node.options.host}:${node.options.port}`, open: () => node.duplicate() };
}

// Sharded pub/sub: the master serving the namespace's slot, found with
// public calls only (CLUSTER SLOTS, and the slot of the hash tag as
// cluster-key-slot computes it for ioredis).
async function slotMaster(r: Cluster, namespace: string): Promise<Redis> {
  const slot = calculateSlot(namespace);
  if (r.status !== 'ready') await r.call('PING');
  const ranges = (await r.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][];
  const range = ranges.find(([lo, hi]) => slot >= Number(lo) && slot <= Number(hi));
  const node = range
    ? r.nodes('master').find((n) => n.options.port === Number(range[2][1]) && [range[2][0], 'localhost'].includes(String(n.options.host)))
    : undefined;
  if (!node) throw new BackendError(`no master known for slot ${slot} of namespace ${namespace}`);
  return node;
}
