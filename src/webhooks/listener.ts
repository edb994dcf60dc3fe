import pg from "pg";
import type { Logger } from "pino";

// One dedicated connection LISTENing on the feature's channels (not a pool slot). Reconnects with
// a growing delay; `onConnect` runs after every (re)connection so callers can catch up on what
// they may have missed while it was down.

export class PgListener {
  private client?: pg.Client;
  private stopped = false;
  private retryMs = 100;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly connectionString: string,
    private readonly channels: string[],
    private readonly onMessage: (channel: string, payload: string) => void,
    private readonly onConnect: () => void,
    private readonly log: Logger,
  ) {}

  start(): void {
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const c = new pg.Client({ connectionString: this.connectionString });
    c.on("notification", (n) => this.onMessage(n.channel, n.payload ?? ""));
    c.on("error", () => this.reconnect(c));
    c.on("end", () => this.reconnect(c));
    try {
      await c.connect();
      for (const ch of this.channels) await c.query(`LISTEN ${pg.escapeIdentifier(ch)}`);
      if (this.stopped) {
        await c.end().catch(() => undefined);
        return;
      }
      this.client = c;
      this.retryMs = 100;
      this.onConnect();
    } catch (err) {
      this.log.warn({ err }, "webhooks: LISTEN connection failed; retrying");
      this.reconnect(c);
    }
  }

  private reconnect(c: pg.Client): void {
    if (this.stopped || (this.client && this.client !== c)) return;
    this.client = undefined;
    c.end().catch(() => undefined);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, 5_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }
}
