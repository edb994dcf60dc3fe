import { unrefTimer } from "./util.js";

// One ordered stream of queued items (events, or metric points): a bounded queue, batches cut by
// count and bytes, an interval timer, and ONE request in flight at a time so order is kept.

/** A queued item: its client id and its JSON, serialized once at the call. */
export interface Item {
  id: string;
  json: string;
  bytes: number;
  /** When it was first put in a request or a beacon (ms): it may be stored from then on. */
  sentAt?: number;
}

export interface StreamConfig {
  flushAt: number;
  flushBytes: number;
  flushIntervalMs: number;
  maxQueueSize: number;
  /** Sends one batch; resolves when it is done with (acknowledged, rejected or given up). Never rejects. */
  send(items: Item[]): Promise<void>;
  /** The queue changed (persistence). */
  changed(): void;
  /** `n` items were dropped because the queue was full. */
  dropped(n: number): void;
}

interface Waiter {
  /** Done when no item with seq <= target remains. */
  target: number;
  resolve(): void;
}

export class Stream {
  private pending: { item: Item; seq: number }[] = [];
  private head = 0; // pending[head..] are the queued items (compacted when a batch is taken)
  private pendingBytes = 0;
  private inflight: { item: Item; seq: number }[] = [];
  private seq = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private waiters: Waiter[] = [];
  private closed = false;

  constructor(private readonly c: StreamConfig) {}

  /** Queued and in-flight items. */
  get size(): number {
    return this.pending.length - this.head + this.inflight.length;
  }

  /** Every item not yet done with, in-flight first (oldest first): what persistence stores. */
  items(): Item[] {
    const out = this.inflight.map((x) => x.item);
    for (let i = this.head; i < this.pending.length; i++) out.push(this.pending[i].item);
    return out;
  }

  push(item: Item): void {
    this.pending.push({ item, seq: ++this.seq });
    this.pendingBytes += item.bytes;
    const over = this.pending.length - this.head + this.inflight.length - this.c.maxQueueSize;
    let dropped = 0;
    // Drop policy: the OLDEST queued items go first. A batch already in flight is not dropped (it
    // may be stored already); when only in-flight items would be left the new item is kept anyway,
    // so the queue never holds more than maxQueueSize + flushAt items.
    for (let i = 0; i < over && this.pending.length - this.head > 1; i++) {
      this.pendingBytes -= this.pending[this.head].item.bytes;
      this.head++;
      dropped++;
    }
    // Dropped items stay in the array below `head` until compacted: compact once they are half of
    // it, so a long stall (a request in flight, items dropped) does not grow memory.
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
    if (dropped) this.c.dropped(dropped);
    this.c.changed();
    if (dropped) this.settle();
    if (this.due()) this.pump();
    else this.arm();
  }

  /** Queues restored items (a previous page's queue, oldest first); called before any push. */
  restore(items: Item[]): void {
    for (const item of items) {
      this.pending.push({ item, seq: ++this.seq });
      this.pendingBytes += item.bytes;
    }
    if (items.length) this.arm();
  }

  /** Resolves when every item queued before the call is done with (sent, rejected, dropped or given up). */
  flush(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    const p = new Promise<void>((resolve) => this.waiters.push({ target: this.seq, resolve }));
    this.pump();
    return p;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private queued(): number {
    return this.pending.length - this.head;
  }

  private due(): boolean {
    return this.queued() >= this.c.flushAt || this.pendingBytes >= this.c.flushBytes;
  }

  private arm(): void {
    if (this.timer || this.closed || this.queued() === 0) return;
    this.timer = unrefTimer(() => {
      this.timer = undefined;
      this.pump();
    }, this.c.flushIntervalMs);
  }

  private take(): { item: Item; seq: number }[] {
    let n = 0;
    let bytes = 0;
    const q = this.queued();
    while (n < q && n < this.c.flushAt) {
      const b = this.pending[this.head + n].item.bytes;
      if (n > 0 && bytes + b > this.c.flushBytes) break;
      bytes += b;
      n++;
    }
    const batch = this.pending.slice(this.head, this.head + n);
    this.pending = this.pending.slice(this.head + n);
    this.head = 0;
    this.pendingBytes -= bytes;
    return batch;
  }

  private pump(): void {
    if (this.inflight.length || this.queued() === 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.take();
    this.inflight = batch;
    void this.c.send(batch.map((x) => x.item)).then(() => {
      this.inflight = [];
      this.c.changed();
      this.settle();
      if (this.due() || this.waiters.length) this.pump();
      else this.arm();
    });
  }

  private settle(): void {
    if (!this.waiters.length) return;
    const oldest = this.inflight[0]?.seq ?? this.pending[this.head]?.seq ?? Infinity;
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      if (oldest > w.target) w.resolve();
      else still.push(w);
    }
    this.waiters = still;
  }
}
