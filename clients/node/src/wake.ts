// The wake-up channel of one namespace: a dedicated connection that
// SSUBSCRIBEs `pl:{NS}:wake` while at least one acquire of this client waits,
// shared by those waits, and closed when the last one ends.
import type Redis from 'ioredis';

type Listener = (payload: string) => void;

interface Subscription {
  conn?: Redis;
  ready: Promise<void>;
}

export class WakeChannel {
  private readonly listeners = new Set<Listener>();
  private sub?: Subscription;

  constructor(
    private readonly channel: string,
    private readonly open: () => Promise<Redis>,
  ) {}

  /**
   * Adds a listener and resolves once the subscription is confirmed by the
   * server (so a removal published after this resolves is seen). Returns the
   * function that removes the listener.
   */
  async attach(listener: Listener): Promise<() => void> {
    this.listeners.add(listener);
    let detached = false;
    const detach = () => {
      if (detached) return;
      detached = true;
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.shutdown();
    };
    try {
      if (!this.sub) this.sub = this.subscribe();
      await this.sub.ready;
    } catch (e) {
      // A failed subscription costs only quick wake-ups: the timed re-check
      // still finds every change, so waiting goes on without messages.
      if (this.sub && this.listeners.size === 1) this.shutdown();
    }
    return detach;
  }

  private subscribe(): Subscription {
    const sub: Subscription = { ready: Promise.resolve() };
    sub.ready = this.open().then((conn) => {
      sub.conn = conn;
      if (this.sub !== sub) return void conn.disconnect(); // shut down meanwhile
      conn.on('error', () => undefined); // reconnects are ioredis's; errors are not fatal to a wait
      conn.on('smessage', (channel: string, message: string) => {
        if (channel !== this.channel) return;
        for (const l of [...this.listeners]) l(message);
      });
      return conn.ssubscribe(this.channel).then(() => undefined);
    });
    sub.ready.catch(() => undefined);
    return sub;
  }

  private shutdown(): void {
    const sub = this.sub;
    this.sub = undefined;
    sub?.conn?.disconnect();
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.shutdown();
  }
}
