import type { Sample } from "./model.js";
import { previewSamples, sampleAt, type SampleSources } from "./samples.js";
import type { AlertQuery } from "./requests.js";

// Batched sampling of live evaluations (issue #31, Performance): the evaluations that ask for a
// sample within the same short gather (GATHER_MS, from the first request) are grouped by what they
// read (project, query, window length). A group of one due time is sampled once with sampleAt (rules
// with the same query, window and due time share that one sample); a group of several due times
// (rules of the same query whose offsets differ, or one rule catching up) asks previewSamples, the
// preview's plan: one statement (or a few) answering every window at once, exact by construction
// (test/alerts/samples.test.ts proves it equal to sampleAt per window), and where it has no exact
// plan (percentiles, distinct counts, ...) each due time is sampled with sampleAt. The source-kind
// tables stay in samples.ts: this file only groups.

export type Sampler = (projectId: string, query: AlertQuery, at: number, windowMs: number) => Promise<Sample>;

/** How long the first request of a gather waits for others (ms). */
const GATHER_MS = 2;

export interface BatchCounts {
  /** A group answered by one previewSamples plan: its due times. */
  batched: (n: number) => void;
  /** Samples taken one at a time (sampleAt). */
  single: (n: number) => void;
}

interface Pending {
  projectId: string;
  query: AlertQuery;
  windowMs: number;
  /** Per due time: the evaluations waiting for its sample. */
  waiters: Map<number, { resolve: (s: Sample) => void; reject: (e: unknown) => void }[]>;
}

export class SampleBatcher {
  private groups = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;

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
        g = { projectId, query, windowMs, waiters: new Map() };
        this.groups.set(key, g);
      }
      const list = g.waiters.get(at) ?? [];
      list.push({ resolve, reject });
      g.waiters.set(at, list);
      this.timer ??= setTimeout(() => this.flush(), GATHER_MS);
    });

  private flush(): void {
    this.timer = undefined;
    const groups = [...this.groups.values()];
    this.groups.clear();
    for (const g of groups) void this.answer(g);
  }

  private async answer(g: Pending): Promise<void> {
    const times = [...g.waiters.keys()].sort((a, b) => a - b);
    const settle = (at: number, s: Sample | undefined, err?: unknown) => {
      for (const w of g.waiters.get(at) ?? []) {
        if (s) w.resolve(s);
        else w.reject(err);
      }
    };
    let samples: (Sample | null)[] | null = null;
    if (times.length > 1) {
      try {
        samples = await previewSamples(this.src, g.projectId, g.query, times, g.windowMs);
      } catch {
        // Sampled one at a time below: each evaluation gets its own error, if any.
        samples = null;
      }
      if (samples) this.counts.batched(times.length);
    }
    await Promise.all(
      times.map(async (at, k) => {
        const s = samples?.[k];
        if (s) return settle(at, s);
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
