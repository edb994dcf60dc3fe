import { VigilError } from "./errors.js";
import type {
  HeartbeatOptions,
  HeartbeatResult,
  JobOptions,
  Loose,
  MetricOptions,
  TrackOptions,
  VigilOptions,
  VigilStats,
} from "./options.js";
import { CorsWatch } from "./cors.js";
import { watchPageHide } from "./page.js";
import { browserStorage, Identity, QueueStore, type Saved } from "./storage.js";
import { Stream, type Item } from "./stream.js";
import { gzip, send, type FetchLike, type RetryOptions } from "./transport.js";
import { inBrowser, nodeProcess, utf8Length, uuid } from "./util.js";

const MAX_EVENTS_PER_BATCH = 1000;
const MAX_METRICS_PER_BATCH = 500;
/**
 * A heartbeat's attempts: with the default backoff (200 ms doubling, full jitter, 30 s cap) its
 * retries span up to ~100 s (~50 s expected), so a heartbeat sent while Vigil restarts or is
 * redeployed still arrives, well within usual grace periods; then it rejects with `gave_up`.
 */
const HEARTBEAT_ATTEMPTS = 10;
/** Smaller bodies are sent as they are (gzip's gain would not pay for its time). */
export const GZIP_MIN_BYTES = 16 * 1024;

function positive(v: number | undefined, dflt: number, name: string, max = Infinity): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !(v > 0)) throw new TypeError(`Vigil: ${name} must be a positive number`);
  return Math.min(v, max);
}

function iso(t: Date | string | undefined): string {
  if (t === undefined) return new Date().toISOString();
  return typeof t === "string" ? t : t.toISOString();
}

/** Keeps only defined fields (JSON.stringify drops undefined ones anyway; this keeps the order fixed). */
function def<T extends Loose>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

export class Vigil {
  /** The browser's anonymous id (sent as `context.anonymousId`); undefined on Node. */
  get anonymousId(): string | undefined {
    return this.identity.anonymousId;
  }
  /** The user set by identify() (persisted in a browser). */
  get userId(): string | undefined {
    return this.identity.userId;
  }

  readonly stats: VigilStats = { queued: 0, sent: 0, dropped: 0, rejected: 0, retries: 0 };

  private readonly apiUrl: string;
  private readonly apiKey: string;
  private readonly publishable: boolean;
  private readonly fetchFn: FetchLike;
  private readonly retry: Required<RetryOptions>;
  private readonly timeoutMs: number;
  private readonly shutdownTimeoutMs: number;
  private readonly reportError: (e: VigilError) => void;
  private readonly events: Stream;
  private readonly metrics: Stream;
  private readonly store: QueueStore | undefined;
  private readonly identity: Identity;
  private readonly browser: boolean;
  private readonly abort = new AbortController();
  private readonly detach: (() => void)[] = [];
  private readonly maxQueueSize: number;
  /** A browser page calling Vigil on another origin: tells a CORS refusal from an outage (cors.ts). */
  private readonly cors: CorsWatch | undefined;
  private gzip: boolean;
  private closed = false;
  private dropping = false;
  /** Set when shutdown gives up: what is stored stays stored. */
  private keepStored = false;

  constructor(opts: VigilOptions) {
    if (!opts || typeof opts.apiKey !== "string" || opts.apiKey === "")
      throw new TypeError("Vigil: apiKey is required");
    this.browser = inBrowser();
    // process.env also exists on edge runtimes (Next.js), where process.versions.node does not.
    const url =
      opts.apiUrl ?? (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.API_URL;
    if (!url) throw new TypeError("Vigil: apiUrl is required (or API_URL in the environment on Node)");
    this.apiUrl = url.replace(/\/+$/, "");
    this.apiKey = opts.apiKey;
    this.publishable = opts.apiKey.startsWith("vk_pub_");
    const f = opts.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("Vigil: no fetch available; pass options.fetch");
    this.fetchFn = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retry = {
      baseMs: positive(opts.retry?.baseMs, 200, "retry.baseMs"),
      maxMs: positive(opts.retry?.maxMs, 30_000, "retry.maxMs"),
      maxAttempts: positive(opts.retry?.maxAttempts, Infinity, "retry.maxAttempts"),
    };
    this.timeoutMs = positive(opts.requestTimeoutMs, 15_000, "requestTimeoutMs");
    this.gzip = opts.gzip ?? this.browser;
    this.shutdownTimeoutMs = positive(opts.shutdownTimeoutMs, 10_000, "shutdownTimeoutMs");
    this.reportError = opts.onError ?? ((e) => console.warn(`[vigil] ${e.message}`));
    const flushAt = positive(opts.flushAt, 100, "flushAt", MAX_EVENTS_PER_BATCH);
    this.maxQueueSize = positive(opts.maxQueueSize, 10_000, "maxQueueSize");
    const common = {
      flushBytes: positive(opts.flushBytes, 256 * 1024, "flushBytes"),
      flushIntervalMs: positive(opts.flushIntervalMs, 1000, "flushIntervalMs"),
      maxQueueSize: this.maxQueueSize,
      changed: () => this.changed(),
      dropped: (n: number) => this.onDropped(n),
    };
    this.events = new Stream({ ...common, flushAt, send: (items) => this.sendEvents(items) });
    this.metrics = new Stream({
      ...common,
      flushAt: Math.min(flushAt, MAX_METRICS_PER_BATCH),
      send: (items) => this.sendMetrics(items),
    });

    const page = this.browser ? crossOriginPage(this.apiUrl) : undefined;
    this.cors =
      page === undefined
        ? undefined
        : new CorsWatch({
            fetch: this.fetchFn,
            origin: page,
            timeoutMs: this.timeoutMs,
            report: (e) => this.reportError(e),
          });

    const storage = opts.storage ?? (this.browser ? browserStorage() : undefined);
    this.identity = new Identity(storage, this.browser || opts.storage !== undefined);
    if (storage && (opts.persist ?? true) && (this.browser || opts.storage !== undefined)) {
      this.store = new QueueStore(storage, opts.apiKey, (e) => this.reportError(e));
      const saved = this.store.adopt();
      this.events.restore(saved.events.map((j) => toItem(j, saved.sentAt)));
      this.metrics.restore(saved.metrics.map((j) => toItem(j, saved.sentAt)));
      if (saved.expired.length) {
        this.stats.rejected += saved.expired.length;
        this.reportError(
          new VigilError(
            "gave_up",
            `${saved.expired.length} stored item(s) first sent more than 6 days ago are not sent again (the server remembers ids for 7 days)`,
            { ids: saved.expired },
          ),
        );
      }
      this.changed();
    }
    if (this.browser) {
      const beacon = (opts.beacon ?? true) && this.publishable;
      this.detach.push(
        watchPageHide({
          save: () => this.store?.saveNow(() => this.snapshot()),
          beacon: beacon ? () => this.events.items() : undefined,
          url: `${this.apiUrl}/v1/events/batch?key=${encodeURIComponent(this.apiKey)}`,
        }),
      );
    }
    this.listenForExit();
  }

  /** Queues an event; returns its client id. */
  track(type: string, data?: Loose, opts: TrackOptions = {}): string {
    const id = uuid();
    const context =
      this.identity.anonymousId && !(opts.context && "anonymousId" in opts.context)
        ? { ...opts.context, anonymousId: this.identity.anonymousId }
        : opts.context;
    this.enqueue(
      this.events,
      id,
      def({
        id,
        type,
        timestamp: iso(opts.timestamp),
        userId: opts.userId ?? this.identity.userId,
        groupId: opts.groupId,
        source: opts.source,
        data,
        context,
        tags: opts.tags,
      }),
    );
    return id;
  }

  /** `$page`; in a browser `data` gets url, path, title and referrer (the caller's values win). */
  page(data?: Loose, opts?: TrackOptions): string {
    const here: Loose = {};
    if (this.browser) {
      here.url = location.href;
      here.path = location.pathname;
      here.title = document.title;
      if (document.referrer) here.referrer = document.referrer;
    }
    return this.track("$page", { ...here, ...data }, opts);
  }

  /** `$identify`: the user's traits; later events carry this userId (persisted in a browser). */
  identify(userId: string, traits?: Loose, opts?: TrackOptions): string {
    if (typeof userId === "string" && userId !== "") this.identity.setUser(userId);
    return this.track("$identify", traits, { ...opts, userId });
  }

  /** `$group`: the group's traits (type, name, size...). */
  group(groupId: string, traits?: Loose, opts?: TrackOptions): string {
    return this.track("$group", traits, { ...opts, groupId });
  }

  /** `$error` with `{message, name, stack}` and `data`. */
  captureError(error: unknown, data?: Loose, opts?: TrackOptions): string {
    const e =
      error instanceof Error
        ? { message: error.message, name: error.name, stack: error.stack }
        : { message: typeof error === "string" ? error : safeString(error), name: "Error" };
    return this.track("$error", def({ ...e, ...data }), opts);
  }

  /** Forgets the identified user (and, in a browser, starts a new anonymous id): call it on log-out. */
  reset(): void {
    this.identity.reset();
  }

  /** A measurement (secret keys only). Returns the point's client id. */
  measure(name: string, value: number, opts: MetricOptions = {}): string {
    return this.metric("measurement", name, value, opts);
  }

  /** A counter increment by `by` (>= 0; secret keys only). */
  increment(name: string, by = 1, opts: MetricOptions = {}): string {
    return this.metric("increment", name, by, opts);
  }

  /** A counter decrement by `by` (>= 0; secret keys only). */
  decrement(name: string, by = 1, opts: MetricOptions = {}): string {
    return this.metric("decrement", name, by, opts);
  }

  /**
   * Sends a heartbeat now (not queued), with a client id so retries (network errors, 5xx, 429;
   * up to 10 attempts) record it once. Resolves with the server's answer; rejects with a VigilError.
   */
  async heartbeat(slug: string, opts: HeartbeatOptions = {}): Promise<HeartbeatResult> {
    return this.signal(slug, "", {
      latencyMs: opts.latencyMs,
      status: opts.status,
      metadata: opts.metadata,
      expectedIntervalMs: opts.expectedIntervalMs,
      gracePeriodMs: opts.gracePeriodMs,
      schedule: opts.schedule,
      runId: opts.runId,
      output: opts.output,
    });
  }

  /**
   * Runs `fn` as one run of the cron monitor `slug`: a `start` signal before it, then a success
   * (its duration as `latencyMs`) or, if it throws, a `fail` with the error's message as the run's
   * output, all with one run id. Resolves with `fn`'s result or rejects with its error; a signal Vigil
   * did not take is reported to `onError` and never changes the job's outcome.
   */
  async job<T>(slug: string, fn: () => T | Promise<T>, opts: JobOptions = {}): Promise<T> {
    const runId = uuid();
    // signal() rejects only with a VigilError (post's refusals, or a call after shutdown()).
    const report = (err: VigilError) => this.reportError(err);
    await this.signal(slug, "/start", { runId, metadata: opts.metadata }).catch(report);
    const began = Date.now();
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      const output = err instanceof Error ? (err.stack ?? `${err.name}: ${err.message}`) : String(err);
      await this.signal(slug, "/fail", { runId, output, latencyMs: Date.now() - began, metadata: opts.metadata }).catch(
        report,
      );
      throw err;
    }
    await this.signal(slug, "", { runId, latencyMs: Date.now() - began, metadata: opts.metadata }).catch(report);
    return result;
  }

  /** A heartbeat or run signal (`suffix` "", "/start", "/fail", "/exit/<code>") with its retries. */
  private async signal(slug: string, suffix: string, fields: Loose): Promise<HeartbeatResult> {
    const id = uuid();
    if (this.closed) throw new VigilError("invalid", "heartbeat after shutdown()", { ids: [id] });
    const body = JSON.stringify(def({ id, ...fields }));
    try {
      const answer = await this.post(
        `/v1/projects/self/heartbeats/${encodeURIComponent(slug)}${suffix}`,
        body,
        [id],
        "heartbeat",
        {
          ...this.retry,
          maxAttempts: Math.min(this.retry.maxAttempts, HEARTBEAT_ATTEMPTS),
        },
      );
      this.stats.sent++;
      return (answer.body as { data: HeartbeatResult }).data;
    } catch (err) {
      this.stats.rejected++;
      throw err;
    }
  }

  /** Sends everything queued before the call; resolves when each item is acknowledged, refused or given up. */
  async flush(): Promise<void> {
    await Promise.all([this.events.flush(), this.metrics.flush()]);
  }

  /**
   * Flushes, waiting at most `shutdownTimeoutMs` (then what is left is given up: reported, and in a
   * browser still in storage for the next load), and stops timers and listeners. Later calls are refused.
   */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const d of this.detach.splice(0)) d();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.shutdownTimeoutMs);
    });
    await Promise.race([this.flush(), deadline]);
    clearTimeout(timer);
    if (this.events.size + this.metrics.size > 0) {
      // Given up here, but a browser keeps them stored for the next load (the server dedupes).
      this.store?.saveNow(() => this.snapshot());
      this.keepStored = true;
      this.abort.abort();
      await this.flush(); // every attempt now gives up at once
    }
    this.events.close();
    this.metrics.close();
    if (!this.keepStored) this.store?.saveNow();
  }

  // --- internals -----------------------------------------------------------------------------

  private metric(
    type: "measurement" | "increment" | "decrement",
    name: string,
    value: number,
    opts: MetricOptions,
  ): string {
    const id = uuid();
    if (this.publishable) {
      this.stats.rejected++;
      this.reportError(
        new VigilError(
          "invalid",
          `${type} "${name}": metric points need a secret key (vk_...), not a publishable one`,
          {
            ids: [id],
          },
        ),
      );
      return id;
    }
    this.enqueue(
      this.metrics,
      id,
      def({ id, type, name, value, unit: opts.unit, timestamp: iso(opts.timestamp), tags: opts.tags }),
    );
    return id;
  }

  private enqueue(stream: Stream, id: string, body: Loose): void {
    if (this.closed) {
      this.stats.dropped++;
      this.reportError(new VigilError("invalid", "tracked after shutdown(): dropped", { ids: [id] }));
      return;
    }
    let json: string;
    try {
      json = JSON.stringify(body);
    } catch (err) {
      this.stats.rejected++;
      this.reportError(
        new VigilError("invalid", `not JSON-serializable: ${err instanceof Error ? err.message : String(err)}`, {
          ids: [id],
        }),
      );
      return;
    }
    stream.push({ id, json, bytes: utf8Length(json) });
  }

  private changed(): void {
    this.stats.queued = this.events.size + this.metrics.size;
    // Report the next drop again once the queue has had room.
    if (this.dropping && Math.max(this.events.size, this.metrics.size) < this.maxQueueSize) this.dropping = false;
    if (!this.keepStored) this.store?.schedule(() => this.snapshot());
  }

  private snapshot(): Saved {
    const sentAt: Record<string, number> = {};
    const json = (items: Item[]) =>
      items.map((i) => {
        if (i.sentAt !== undefined) sentAt[i.id] = i.sentAt;
        return i.json;
      });
    return { events: json(this.events.items()), metrics: json(this.metrics.items()), sentAt };
  }

  private onDropped(n: number): void {
    this.stats.dropped += n;
    if (!this.dropping) {
      this.dropping = true;
      this.reportError(
        new VigilError("queue_full", `queue full: dropping the oldest items (${this.stats.dropped} dropped so far)`),
      );
    }
  }

  private post(
    path: string,
    body: string | Uint8Array<ArrayBuffer>,
    ids: string[],
    what: string,
    retry = this.retry,
    gzipped = false,
  ) {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.apiKey}`,
      "content-type": "application/json",
    };
    if (gzipped) headers["content-encoding"] = "gzip";
    return send({
      fetch: this.fetchFn,
      url: this.apiUrl + path,
      headers,
      body,
      retry,
      timeoutMs: this.timeoutMs,
      signal: this.abort.signal,
      onRetry: () => void this.stats.retries++,
      onAnswer: () => this.cors?.answered(),
      onNetworkError: () => this.cors?.networkError(this.apiUrl + path, ids),
      what,
      ids,
    });
  }

  private sendEvents(items: Item[]): Promise<void> {
    return this.sendBatch("/v1/events/batch", "events", items);
  }

  private sendMetrics(items: Item[]): Promise<void> {
    return this.sendBatch("/v1/projects/self/metrics/batch", "metrics", items);
  }

  private async sendBatch(path: string, field: "events" | "metrics", items: Item[]): Promise<void> {
    const ids = items.map((i) => i.id);
    const body = `{"${field}":[${items.map((i) => i.json).join(",")}]}`;
    const now = Date.now();
    for (const i of items) i.sentAt ??= now;
    this.changed(); // persists the first-send times
    try {
      const answer = await this.postMaybeGzipped(path, body, ids, `${field} batch`);
      const errors = (answer.body as { data?: { errors?: { index?: number; code?: string; message?: string }[] } })
        ?.data?.errors;
      const bad = Array.isArray(errors) ? errors.filter((e) => typeof e.index === "number" && items[e.index]) : [];
      this.stats.sent += items.length - bad.length;
      if (bad.length) {
        this.stats.rejected += bad.length;
        for (const e of bad) {
          this.reportError(
            new VigilError("rejected", `${field.slice(0, -1)} refused: ${e.message ?? e.code ?? "invalid"}`, {
              status: answer.status,
              serverCode: e.code,
              ids: [items[e.index as number].id],
            }),
          );
        }
      }
    } catch (err) {
      this.stats.rejected += items.length;
      this.reportError(err instanceof VigilError ? err : new VigilError("gave_up", String(err), { ids }));
    }
  }

  /**
   * Large bodies are gzipped when enabled and CompressionStream exists. A server that refuses the
   * encoding (415: a Vigil older than gzip support) gets plain JSON, now and from then on.
   */
  private async postMaybeGzipped(path: string, body: string, ids: string[], what: string) {
    if (!this.gzip || body.length < GZIP_MIN_BYTES || typeof CompressionStream === "undefined") {
      return this.post(path, body, ids, what);
    }
    let zipped: Uint8Array<ArrayBuffer>;
    try {
      zipped = await gzip(body);
    } catch {
      return this.post(path, body, ids, what);
    }
    try {
      return await this.post(path, zipped, ids, what, this.retry, true);
    } catch (err) {
      if (!(err instanceof VigilError) || err.status !== 415) throw err;
      this.gzip = false;
      return this.post(path, body, ids, what);
    }
  }

  private listenForExit(): void {
    const proc = nodeProcess();
    if (!proc?.on || !proc.off) return;
    let exiting: Promise<void> | undefined;
    const onBeforeExit = () => {
      if (exiting || this.events.size + this.metrics.size === 0) return;
      // The loop is empty (retry waits are unref'd): hold it open while flushing, for at most shutdownTimeoutMs.
      const hold = setInterval(() => {}, 1000);
      exiting = this.shutdown().finally(() => clearInterval(hold));
    };
    proc.on("beforeExit", onBeforeExit);
    this.detach.push(() => proc.off?.("beforeExit", onBeforeExit));
  }
}

function toItem(json: string, sentAt: Record<string, number> = {}): Item {
  let id = "";
  try {
    id = String((JSON.parse(json) as { id?: unknown }).id ?? "");
  } catch {
    // QueueStore.adopt only returns parseable items with an id
  }
  return { id, json, bytes: utf8Length(json), sentAt: sentAt[id] };
}

/** The page's origin when `apiUrl` is on another one (CORS applies), else undefined. */
function crossOriginPage(apiUrl: string): string | undefined {
  try {
    const here = location.origin;
    return new URL(apiUrl, location.href).origin === here ? undefined : here;
  } catch {
    return undefined;
  }
}

function safeString(v: unknown): string {
  try {
    return typeof v === "object" ? JSON.stringify(v) : String(v);
  } catch {
    return String(v);
  }
}
