import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runDurationsTo, type RunDuration } from "../../src/uptime/runs.js";

// The run-duration sink (src/uptime/runs.ts) on its own: durations handed over in the same turn as
// a stop are written before the stop resolves (the uptime feature's stop awaits `drain`, before the
// events ingestor and the pool stop), and one project's failed write rejects its own durations only.

const duration = (projectId: string, n: number): RunDuration => ({
  projectId,
  runRecordId: `run_${projectId}_${n}`,
  monitorSlug: "backup",
  outcome: "succeeded",
  durationMs: n,
  endedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
});

describe("run durations to metric points", () => {
  it("drain writes what was handed over in the same turn, and resolves only once it is written", async () => {
    const written: string[] = [];
    const sink = runDurationsTo(async (projectId, points) => {
      await new Promise((r) => setTimeout(r, 30)); // a write that takes a while
      for (const p of points) written.push(`${projectId}:${p.value}:${p.tags.outcome}`);
    });
    const first = sink.record([duration("a", 1), duration("b", 2)]);
    const second = sink.record([duration("a", 3)]); // while the first write may be running
    await sink.drain();
    assert.deepEqual(written.sort(), ["a:1:succeeded", "a:3:succeeded", "b:2:succeeded"]);
    await Promise.all([first, second]);
  });

  it("a failed project rejects its own durations, the others are written", async () => {
    const written: string[] = [];
    const sink = runDurationsTo(async (projectId, points) => {
      if (projectId === "gone") throw new Error("project deleted");
      for (const p of points) written.push(`${projectId}:${p.value}`);
    });
    const [ok, gone] = await Promise.allSettled([sink.record([duration("a", 1)]), sink.record([duration("gone", 2)])]);
    assert.equal(ok.status, "fulfilled");
    assert.equal(gone.status, "rejected");
    await sink.drain();
    assert.deepEqual(written, ["a:1"]);
  });
});
