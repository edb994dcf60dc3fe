import type { Sample } from "./model.js";
import { previewSamples, sampleAt, type SampleSources } from "./samples.js";
import type { AlertQuery } from "./requests.js";

// Batched sampling of live evaluations (issue #31, Performance): evaluations ask for their samples
// here, grouped by what they read (project, query, window length). Each group has at most one
// statement in flight: the requests that arrive meanwhile (or within GATHER_MS of the first) wait
// and are answered together by the next, so batches grow exactly when evaluations fall behind. A
// batch of one due time is sampled once with sampleAt (rules with the same query, window and due time
// share it); a batch of several due times (rules of the same query whose offsets differ, or one rule
// catching up) asks previewSamples, the preview's plan: one statement (or a few) answering every
// window at once, exact by construction (test/alerts/samples.test.ts holds it equal to sampleAt per
// window); where that has no exact plan (percentiles, distinct counts, ...) each due time is sampled
// with sampleAt. The source-kind tables stay in samples.ts: this file only groups.

export type Sampler = (projectId: string, query: AlertQuery, at: number, windowMs: number) => Promise<Sample>;

/** How long the first request of a batch waits for others (ms). */
const GATHER_MS = 2;

export interface BatchCounts {
  /** A batch answered by one previewSamples plan: its due times. */
  batched: (n: number) => void;
  /** Samples taken one at a time (sampleAt). */
  single: (n: number) => void;
}

type Waiter = { resolve: (s: Sample) => void; reject: (e: unknown) => void };

interface Group {
  projectId: string;
  query: AlertQuery;
  windowMs: number;
  /** Per due time: the evaluations waiting for its sample (the next batch). */
  pending: Map<number, Waiter[]>;
  /** A batch is being answered, or is about to be (its gather timer runs). */
  busy: boolean;
}

export class SampleBatcher {
  private groups = new Map<string, Group>();

  constructor(
    private readonly src: SampleSources,
    private readonly counts: BatchCounts,
  ) {}

  /** The sample of the window [at - windowMs, at], as sampleAt answers it, possibly shared with others. */
  readonly sample: Sampler = (projectId, query, at, windowMs) =>
    new Promise<Sample>((resolve, reject) => {
      const key = JSON.stringify([projectId, windowMs, query]);
      let g = this.groups.get(key);
      if (!g) {
        g = { projectId, query, windowMs, pending: new Map(), busy: false };
        this.groups.set(key, g);
      }
      const list = g.pending.get(at) ?? [];
      list.push({ resolve, reject });
      g.pending.set(at, list);
      if (!g.busy) {
        g.busy = true;
        const group = g;
        setTimeout(() => void this.drain(key, group), GATHER_MS);
      }
    });

  /** Answers the group's batches until none waits. */
  private async drain(key: string, g: Group): Promise<void> {
    while (g.pending.size) {
      const batch = g.pending;
      g.pending = new Map();
      await this.answer(g, batch);
    }
    g.busy = false;
    this.groups.delete(key);
  }

  private async answer(g: Group, batch: Map<number, Waiter[]>): Promise<void> {
    const times = [...batch.keys()].sort((a, b) => a - b);
    const settle = (at: number, s: Sample | undefined, err?: unknown) => {
      for (const w of batch.get(at) ?? []) {
        if (s) w.resolve(s);
        else w.reject(err);
      }
    };
    let samples: Sample[] | null = null;
    if (times.length > 1) {
      try {
        samples = await previewSamples(this.src, g.projectId, g.query, times, g.windowMs);
      } catch {
        // Sampled one at a time below: each evaluation gets its own error, if any.
        samples = null;
      }
      if (samples) {
        this.counts.batched(times.length);
        times.forEach((at, k) => settle(at, samples![k]));
        return;
      }
    }
    await Promise.all(
      times.map(async (at) => {
        try {
          this.counts.single(1);
          settle(at, await sampleAt(this.src, g.projectId, g.query, at, g.windowMs));
        } catch (err) {
          settle(at, undefined, err);
        }
      }),
    );
  }
}
