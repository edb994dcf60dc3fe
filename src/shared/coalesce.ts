// Queue-and-coalesce: the one loop behind every "many callers, one write" path (group commit of
// events and heartbeats, batched API-key look-ups, batched webhook outcomes) and every "wake me,
// coalesced" pass (the derived-records projector, the webhook outbox expander and scheduler, the
// Temporal wake drain). Items are queued; a flush takes what is queued (whole items, up to
// `maxBatch` by weight) and everything queued while a flush runs goes in the next one. So:
// * at most `concurrency` flushes run at once (default 1: one at a time);
// * the first item queued waits `wait` for company: a number of ms (a timer), "turn" (the rest of
//   this event-loop turn, setImmediate), or nothing (the flush starts inside submit()). A full batch
//   goes at once. Items still queued when a flush ends go at once (its run was their wait), unless
//   `waitEachBatch`: then every batch waits `wait` after the flush before it;
// * a flush answers one result per item (an Error rejects that item alone) or nothing (every item
//   resolves with undefined); a flush that throws rejects every item of its batch, and no other;
// * stop() flushes everything queued at once (no more waiting until then) and resolves when nothing
//   is queued or running; idle() waits for the same without hurrying. Refusing new items after a
//   stop is the caller's decision (ingest answers 503; a wake-up after stop is simply ignored).
// The caller's promise settles only when its batch's flush finished, so "durable when resolved"
// holds whenever the flush commits before it returns.

export interface CoalesceOptions<T, R> {
  /** Writes one batch. Results by position; an Error rejects that item. Void: every item resolves undefined. */
  flush(items: T[]): Promise<readonly (R | Error)[] | void>;
  /** Most weight in one batch (a batch always holds at least one item). Default: no cap. */
  maxBatch?: number;
  /** An item's weight against maxBatch (default 1). */
  weight?(item: T): number;
  /** Flushes at once (default 1). */
  concurrency?: number;
  /** How long a batch started from idle waits for company (see above). */
  wait?: number | "turn";
  /** Every batch waits `wait`, also one queued behind a running flush. */
  waitEachBatch?: boolean;
  /** An item waits while every flush slot is busy (the writer is the bottleneck: backpressure signals). */
  onSaturated?(): void;
  /** The queued weight changed. */
  onDepth?(queued: number): void;
}

interface Entry<T, R> {
  item: T;
  weight: number;
  resolve(r: R): void;
  reject(e: unknown): void;
}

export class Coalescer<T, R = void> {
  private queue: Entry<T, R>[] = [];
  private weight = 0;
  private running = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private hurry = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: CoalesceOptions<T, R>) {}

  /** Weight queued and not yet taken by a flush. */
  get queued(): number {
    return this.weight;
  }

  /** Flushes running now. */
  get inFlight(): number {
    return this.running;
  }

  /** Queues an item; settles when the flush that took it finished. */
  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const weight = this.o.weight ? this.o.weight(item) : 1;
      this.queue.push({ item, weight, resolve, reject });
      this.weight += weight;
      this.o.onDepth?.(this.weight);
      if (this.running >= this.concurrency) this.o.onSaturated?.();
      this.schedule();
    });
  }

  /** Resolves once nothing is queued and no flush runs (the wait is kept). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise<void>((r) => this.idleWaiters.push(r));
  }

  /** Flushes everything queued now (no more waiting) and resolves when idle. */
  stop(): Promise<void> {
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    this.hurry = true;
    this.cancelWait();
    this.pump();
    return this.idle();
  }

  private get concurrency(): number {
    return this.o.concurrency ?? 1;
  }

  private get full(): boolean {
    return this.o.maxBatch !== undefined && this.weight >= this.o.maxBatch;
  }

  /** After a submit: start now, or arm the wait (once), or leave it to a running flush's end. */
  private schedule(): void {
    if (this.hurry || this.full || this.o.wait === undefined) return this.pump();
    if (this.timer || this.immediate) return;
    if (this.o.waitEachBatch && this.running >= this.concurrency) return; // armed when a flush ends
    this.armWait();
  }

  private armWait(): void {
    const w = this.o.wait;
    if (w === "turn") this.immediate = setImmediate(() => this.onWait());
    else this.timer = setTimeout(() => this.onWait(), w);
  }

  private onWait(): void {
    this.timer = undefined;
    this.immediate = undefined;
    this.pump();
  }

  private cancelWait(): void {
    clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
  }

  /** Starts flushes while items are queued and slots are free. */
  private pump(): void {
    if (this.queue.length > 0 && this.running >= this.concurrency) this.o.onSaturated?.();
    while (this.queue.length > 0 && this.running < this.concurrency) {
      const batch = this.take();
      this.running++;
      void this.run(batch);
    }
    if (this.queue.length === 0) this.cancelWait();
  }

  private take(): Entry<T, R>[] {
    const max = this.o.maxBatch ?? Infinity;
    let w = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || w + this.queue[n].weight <= max)) w += this.queue[n++].weight;
    const batch = this.queue.splice(0, n);
    this.weight -= w;
    this.o.onDepth?.(this.weight);
    return batch;
  }

  private async run(batch: Entry<T, R>[]): Promise<void> {
    try {
      const results = await this.o.flush(batch.map((e) => e.item));
      for (let i = 0; i < batch.length; i++) {
        const r = results ? results[i] : undefined;
        if (r instanceof Error) batch[i].reject(r);
        else batch[i].resolve(r as R);
      }
    } catch (err) {
      for (const e of batch) e.reject(err);
    } finally {
      this.running--;
      this.afterFlush();
    }
  }

  private afterFlush(): void {
    if (this.queue.length > 0) {
      if (this.hurry || this.full || !this.o.waitEachBatch || this.o.wait === undefined) this.pump();
      else if (!this.timer && !this.immediate) this.armWait();
    } else if (this.running === 0) {
      this.hurry = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}
