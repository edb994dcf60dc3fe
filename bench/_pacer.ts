// Paced heartbeats for the Temporal-mode uptime bench: every monitor beats once per `periodMs` at its
// own phase (like real clients each on its own clock), not round-robin as fast as possible. A time
// wheel of 10 ms slots holds each monitor's next beat; a beat that cannot be sent at once (too many
// in flight) waits in a queue and its lateness (sent - due) is recorded, so a load generator or a
// service falling behind shows in the figures instead of passing for a detection delay.
import http from "node:http";
import { post } from "./_shared.js";

const SLOT_MS = 10;

interface Monitor {
  slug: string;
  /** Next beat due (performance.now() clock). */
  due: number;
  stopped: boolean;
  /** Accepted heartbeats (the first one creates the monitor). */
  acked: number;
}

export class Pacer {
  readonly monitors: Monitor[] = [];
  private wheel = new Map<number, number[]>();
  private cur = Math.floor(performance.now() / SLOT_MS);
  private readonly timer: NodeJS.Timeout;
  private readonly agent: http.Agent;
  private inflight = 0;
  private pending: { i: number; due: number }[] = [];
  private idle: (() => void)[] = [];
  /** Since the last resetStats(): lateness of each beat (ms), accepted beats, failures. */
  late: number[] = [];
  accepted = 0;
  errors = 0;
  lastError = "";
  private since = performance.now();

  constructor(
    private readonly port: number,
    private readonly key: string,
    private readonly projectId: string,
    public periodMs: number,
    /** Body of a monitor's first heartbeat (creates it with its interval and grace). */
    private readonly createBody: string,
    private readonly prefix: string,
    private readonly maxInflight = 128,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: maxInflight });
    this.timer = setInterval(() => this.tick(), SLOT_MS);
  }

  /** Monitors not stopped. */
  beating(): number {
    return this.monitors.filter((m) => !m.stopped).length;
  }

  /** Adds n monitors whose first beats (creating them) are spread evenly over the next spreadMs. */
  add(n: number, spreadMs: number): void {
    const t = performance.now();
    for (let j = 0; j < n; j++) {
      const i =
        this.monitors.push({
          slug: `${this.prefix}${this.monitors.length}`,
          due: t + (j * spreadMs) / Math.max(1, n),
          stopped: false,
          acked: 0,
        }) - 1;
      this.schedule(i);
    }
  }

  /** True once every monitor has had a heartbeat accepted. */
  allCreated(): boolean {
    return this.monitors.every((m) => m.acked > 0);
  }

  /**
   * Stops the k beating monitors whose next beat is due soonest (so their last beat is about one
   * period old and their deadline comes first); returns their slugs.
   */
  stopNextDue(k: number): string[] {
    const picked = this.monitors
      .map((m, i) => ({ m, i }))
      .filter(({ m }) => !m.stopped && m.acked > 0)
      .sort((a, b) => a.m.due - b.m.due)
      .slice(0, k);
    for (const { m } of picked) m.stopped = true;
    return picked.map(({ m }) => m.slug);
  }

  /** Stops every monitor. */
  stopAll(): void {
    for (const m of this.monitors) m.stopped = true;
  }

  /** A new period; every pending beat is moved to the same fraction of the new period. */
  retime(periodMs: number): void {
    const now = performance.now();
    const f = periodMs / this.periodMs;
    this.periodMs = periodMs;
    this.wheel.clear();
    this.cur = Math.floor(now / SLOT_MS);
    this.monitors.forEach((m, i) => {
      m.due = now + Math.max(0, m.due - now) * f;
      this.schedule(i);
    });
  }

  resetStats(): void {
    this.late = [];
    this.accepted = 0;
    this.errors = 0;
    this.since = performance.now();
  }

  /** Accepted heartbeats per second since the last resetStats(). */
  rate(): number {
    return this.accepted / ((performance.now() - this.since) / 1000);
  }

  /** Stops the clock and waits for the beats in flight. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.pending = [];
    if (this.inflight) await new Promise<void>((r) => this.idle.push(r));
    this.agent.destroy();
  }

  private schedule(i: number): void {
    const s = Math.max(this.cur, Math.floor(this.monitors[i].due / SLOT_MS));
    const list = this.wheel.get(s);
    if (list) list.push(i);
    else this.wheel.set(s, [i]);
  }

  private tick(): void {
    const last = Math.floor(performance.now() / SLOT_MS);
    for (; this.cur <= last; this.cur++) {
      const list = this.wheel.get(this.cur);
      if (!list) continue;
      this.wheel.delete(this.cur);
      for (const i of list) {
        const m = this.monitors[i];
        if (m.stopped) continue;
        const due = m.due;
        m.due = due + this.periodMs;
        this.schedule(i);
        if (this.inflight < this.maxInflight) this.send(i, due);
        else this.pending.push({ i, due });
      }
    }
  }

  private send(i: number, due: number): void {
    const m = this.monitors[i];
    this.inflight++;
    this.late.push(Math.max(0, performance.now() - due));
    post(
      this.agent,
      this.port,
      `/v1/projects/${this.projectId}/heartbeats/${m.slug}`,
      m.acked ? "{}" : this.createBody,
      this.key,
    )
      .then(
        (r) => {
          if (r.status === 200) {
            m.acked++;
            this.accepted++;
          } else {
            this.errors++;
            this.lastError = `${r.status} ${r.text.slice(0, 200)}`;
          }
        },
        (err) => {
          this.errors++;
          this.lastError = String(err);
        },
      )
      .finally(() => {
        this.inflight--;
        let next = this.pending.shift();
        while (next && this.monitors[next.i].stopped) next = this.pending.shift();
        if (next) this.send(next.i, next.due);
        if (!this.inflight) for (const r of this.idle.splice(0)) r();
      });
  }
}
