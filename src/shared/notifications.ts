import pg from "pg";
import type { Logger } from "pino";

// The process's one LISTEN connection (not a pool slot), shared by every feature that follows a
// NOTIFY channel (uptime deadlines, webhook deliveries and changes). Reconnects with a growing
// delay (100 ms doubling up to 5 s); after each REconnection every subscriber's `onReconnect` runs
// so that it can catch up on what it may have missed while the connection was down.

export interface Subscriber {
  channels: readonly string[];
  onMessage(channel: string, payload: string): void;
  onReconnect(): void;
}

/** One subscriber's place on the connection. */
export interface Subscription {
  /** Resolves once its channels are LISTENed to (or once closed: a feature may stop before that). */
  listening: Promise<void>;
  /** Leaves at once, connected or not: a feature's stop() never waits on the database. */
  close(): void;
}

/** What features see of the LISTEN connection (Deps.notifications). */
export interface Notifications {
  subscribe(sub: Subscriber): Subscription;
  stop(): Promise<void>;
}

export class PgNotifications implements Notifications {
  private client?: pg.Client;
  private connecting?: Promise<void>;
  private stopped = false;
  private retryMs = 100;
  private timer?: NodeJS.Timeout;
  private connectedOnce = false;
  private readonly subscribers = new Set<Subscriber>();
  /** Subscribers waiting for their channels to be LISTENed to. */
  private waiting: { sub: Subscriber; done: () => void }[] = [];

  constructor(
    private readonly options: pg.ClientConfig,
    private readonly log: Logger,
  ) {}

  /**
   * Adds a subscriber; its `listening` resolves once its channels are LISTENed to (connecting first
   * if needed, retrying with backoff).
   */
  subscribe(sub: Subscriber): Subscription {
    this.subscribers.add(sub);
    let done!: () => void;
    const listening = new Promise<void>((resolve) => (done = resolve));
    const wait = () => this.waiting.push({ sub, done });
    const c = this.client;
    if (this.stopped) done();
    else if (c)
      // The connection may fail meanwhile: the reconnection LISTENs to every channel.
      void (async () => {
        for (const ch of sub.channels) await c.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
      })().then(done, wait);
    else {
      wait();
      if (!this.connecting && !this.timer) this.connecting = this.connect();
    }
    return {
      listening,
      close: () => {
        this.subscribers.delete(sub);
        this.waiting = this.waiting.filter((w) => w.sub !== sub);
        done();
      },
    };
  }

  private channels(): string[] {
    return [...new Set([...this.subscribers].flatMap((s) => s.channels))];
  }

  private async connect(): Promise<void> {
    this.timer = undefined;
    if (this.stopped) return;
    const c = new pg.Client(this.options);
    c.on("notification", (n) => {
      for (const s of this.subscribers) if (s.channels.includes(n.channel)) s.onMessage(n.channel, n.payload ?? "");
    });
    c.on("error", () => this.reconnect(c));
    c.on("end", () => this.reconnect(c));
    try {
      await c.connect();
      // Until every subscriber's channel is listened to (one may subscribe meanwhile).
      const listened = new Set<string>();
      for (let todo = this.channels(); todo.length; todo = this.channels().filter((ch) => !listened.has(ch)))
        for (const ch of todo) {
          await c.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
          listened.add(ch);
        }
      if (this.stopped) {
        await c.end().catch(() => undefined);
        return;
      }
      this.client = c;
      this.retryMs = 100;
      const reconnected = this.connectedOnce;
      this.connectedOnce = true;
      const waiting = this.waiting;
      this.waiting = [];
      for (const w of waiting) w.done();
      if (reconnected) for (const s of this.subscribers) if (!waiting.some((w) => w.sub === s)) s.onReconnect();
    } catch (err) {
      this.log.warn({ err }, "LISTEN connection failed; retrying");
      this.reconnect(c);
    } finally {
      this.connecting = undefined;
    }
  }

  private reconnect(c: pg.Client): void {
    if (this.stopped || (this.client && this.client !== c)) return;
    this.client = undefined;
    c.end().catch(() => undefined);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void (this.connecting = this.connect()), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, 5_000);
  }

  /** Closes the connection (after every feature has stopped); pending subscribers are released. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const w of this.waiting) w.done();
    this.waiting = [];
    await this.connecting;
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}
