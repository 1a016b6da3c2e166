// The wake-up channels of a client: one dedicated connection per Redis node
// (one for standalone and Sentinel, one per Cluster master serving a waiting
// namespace), shared by every waiting acquire of the client and of the
// clients `forNamespace()` made from it. A namespace's channel
// `pl:{NS}:wake` is SSUBSCRIBEd while at least one of its acquires waits;
// a node's connection is closed when no channel on it is left.
import type Redis from 'ioredis';

type Listener = (payload: string) => void;

/** Where a namespace's wake-ups are subscribed: a node's key and how to connect to it. */
export interface WakeNode {
  key: string;
  open: () => Redis;
}

interface Channel {
  listeners: Set<Listener>;
  ready: Promise<unknown>;
}

interface NodeConnection {
  conn: Redis;
  channels: Map<string, Channel>;
}

export class WakeHub {
  private readonly nodes = new Map<string, NodeConnection>();

  /** Open subscription connections (one per node with a waiting namespace). */
  get connections(): number {
    return this.nodes.size;
  }

  /**
   * Adds a listener of `channel` and resolves once the subscription is
   * confirmed by the server (so a removal published after this resolves is
   * seen). Returns the function that removes the listener. A subscription
   * that fails costs only quick wake-ups: the timed re-check still finds
   * every change.
   */
  async attach(channel: string, locate: () => Promise<WakeNode>, listener: Listener): Promise<() => void> {
    let node: WakeNode;
    try {
      node = await locate();
    } catch {
      return () => undefined;
    }
    const nc = this.connection(node);
    let ch = nc.channels.get(channel);
    if (!ch) {
      ch = { listeners: new Set(), ready: whenReady(nc.conn).then(() => nc.conn.ssubscribe(channel)) };
      ch.ready.catch(() => undefined);
      nc.channels.set(channel, ch);
    }
    ch.listeners.add(listener);
    const detach = once(() => this.detach(node.key, channel, listener));
    await ch.ready.catch(() => undefined);
    return detach;
  }

  private connection(node: WakeNode): NodeConnection {
    const known = this.nodes.get(node.key);
    if (known) return known;
    const nc: NodeConnection = { conn: node.open(), channels: new Map() };
    nc.conn.on('error', () => undefined); // reconnects are ioredis's; errors are not fatal to a wait
    nc.conn.on('smessage', (channel: string, message: string) => {
      for (const l of [...(nc.channels.get(channel)?.listeners ?? [])]) l(message);
    });
    this.nodes.set(node.key, nc);
    return nc;
  }

  private detach(key: string, channel: string, listener: Listener): void {
    const nc = this.nodes.get(key);
    const ch = nc?.channels.get(channel);
    if (!nc || !ch) return;
    ch.listeners.delete(listener);
    if (ch.listeners.size > 0) return;
    nc.channels.delete(channel);
    if (nc.channels.size > 0) {
      nc.conn.sunsubscribe(channel).catch(() => undefined);
      return;
    }
    this.nodes.delete(key);
    nc.conn.disconnect();
  }

  /** Closes every subscription connection (waits go on with timed re-checks). */
  async close(): Promise<void> {
    for (const nc of this.nodes.values()) nc.conn.disconnect();
    this.nodes.clear();
  }
}

/**
 * Resolves when `conn` is ready (at once if it is), rejects if it fails or
 * ends first. SSUBSCRIBE waits for this: ioredis writes a command flagged
 * "loading" (SSUBSCRIBE is) during the connection's handshake, ahead of its
 * INFO ready check; the reply turns the connection to subscriber mode and
 * ioredis then refuses its own INFO, failing the connection and every
 * subscription on it (seen as a wait that was never woken: wait.test.js).
 */
function whenReady(conn: Redis): Promise<void> {
  if (conn.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const settle = (e?: Error) => {
      conn.off('ready', onReady);
      conn.off('error', onError);
      conn.off('end', onEnd);
      if (e) reject(e);
      else resolve();
    };
    const onReady = () => settle();
    const onError = (e: Error) => settle(e);
    const onEnd = () => settle(new Error('the wake-up connection closed'));
    conn.on('ready', onReady);
    conn.on('error', onError);
    conn.on('end', onEnd);
    // A lazy connection (a Cluster node's duplicate) connects at its first command: start it.
    if (conn.status === 'wait') conn.connect().catch(() => undefined);
  });
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
