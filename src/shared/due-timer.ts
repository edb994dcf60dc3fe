import { MinHeap } from "./heap.js";

// ONE timer over a lazy min-heap of due times: what the uptime deadline scheduler, the alert
// scheduler (and later maintenance windows) share. Each id has at most one current due time (with a
// value the owner needs, e.g. its project); the heap may hold older entries for it, skipped when
// popped (lazy deletion). The timer points at the earliest current due time; when that has come,
// onDue() is called (at once if it has already passed), and the owner takes the due entries with
// takeDue(). The timer is never set further than maxDelayMs ahead (the wall clock may jump: suspend,
// NTP step), and a wake before the earliest due time only re-arms: onDue() never runs early.

export interface DueTimerOptions {
  /** The wall clock, ms (deps.clock). */
  now: () => number;
  /** The longest single wait; a later due time is reached by re-arming. */
  maxDelayMs: number;
  /** The earliest due time has come: take the due entries (takeDue). Called synchronously from arm(). */
  onDue: () => void;
}

export interface DueEntry<V> {
  id: string;
  at: number;
  value: V;
}

export class DueTimer<V> {
  private heap = new MinHeap();
  private current = new Map<string, { at: number; value: V }>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private running = false;

  constructor(private readonly opts: DueTimerOptions) {}

  start(): void {
    this.running = true;
  }

  /** Clears the timer and every due time; arm() does nothing until start(). */
  stop(): void {
    this.running = false;
    this.clearTimer();
    this.heap.clear();
    this.current.clear();
  }

  /** Ids with a current due time. */
  get size(): number {
    return this.current.size;
  }

  /** Exact: `id` is next due at `at` (earlier or later than before). Call arm() after a batch of changes. */
  set(id: string, at: number, value: V): void {
    if (!this.running || this.current.get(id)?.at === at) return;
    this.current.set(id, { at, value });
    this.heap.push({ id, at });
  }

  /** A hint (a notification, a re-scan): kept only if it is earlier than the known due time. */
  offer(id: string, at: number, value: V): void {
    const cur = this.current.get(id);
    if (cur === undefined || at < cur.at) this.set(id, at, value);
  }

  /** `id` is no longer due (its heap entries are skipped when popped). */
  delete(id: string): void {
    this.current.delete(id);
  }

  /** Points the timer at the earliest current due time; calls onDue() now if that has passed. */
  arm(): void {
    if (!this.running) return;
    const top = this.earliest();
    if (top === undefined) return;
    const delay = Math.min(top - this.opts.now(), this.opts.maxDelayMs);
    if (delay <= 0) {
      this.clearTimer();
      this.opts.onDue();
      return;
    }
    if (this.timer && this.timerAt <= top) return;
    this.clearTimer();
    this.timerAt = top;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.arm();
    }, delay);
  }

  /** Forgets the timer and arms afresh (after a re-scan: the wall clock may have jumped since it was set). */
  rearm(): void {
    this.clearTimer();
    this.arm();
  }

  /**
   * Removes and returns the current entries due at `now`, earliest first, at most `limit`. An entry
   * `hold(id)` refuses stays due (and in the heap) for a later call.
   */
  takeDue(now: number, limit: number, hold?: (id: string) => boolean): DueEntry<V>[] {
    const due: DueEntry<V>[] = [];
    const held: { id: string; at: number }[] = [];
    for (let top = this.heap.peek(); top && top.at <= now && due.length < limit; top = this.heap.peek()) {
      this.heap.pop();
      const cur = this.current.get(top.id);
      if (cur?.at !== top.at) continue;
      if (hold?.(top.id)) {
        held.push(top);
        continue;
      }
      this.current.delete(top.id);
      due.push({ id: top.id, at: top.at, value: cur.value });
    }
    for (const h of held) this.heap.push(h);
    return due;
  }

  /** The earliest current due time (stale heap entries above it are dropped). */
  private earliest(): number | undefined {
    let top = this.heap.peek();
    while (top && this.current.get(top.id)?.at !== top.at) {
      this.heap.pop();
      top = this.heap.peek();
    }
    return top?.at;
  }

  private clearTimer(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }
}
