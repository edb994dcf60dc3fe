import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import type { Ingestor, NewEvent } from "../../src/events/pipeline.js";
import { eventsOf, startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";

// The group-commit Ingestor as other features use it (metrics hands it $measure events).

let t: TestApp;
let p: ProjectFixture;
let ingestor: Ingestor;
let db: pg.Client;
before(async () => {
  t = await startTestApp({ INGEST_FLUSH_MS: "20" });
  p = await project(t.rest);
  ingestor = (t.app.features.find((f) => f.name === "events") as unknown as { ingestor: Ingestor }).ingestor;
  db = new pg.Client({ connectionString: t.databaseUrl });
  await db.connect();
});
after(async () => {
  await db.end();
  await t.close();
});

const ev = (type: string, extra: Partial<NewEvent> = {}): NewEvent => ({
  type,
  timestamp: new Date(),
  userId: null,
  groupId: null,
  source: null,
  data: {},
  context: {},
  tags: {},
  ...extra,
});

describe("group commit", () => {
  it("shares one transaction between concurrent callers, runs hooks around the insert, stores slots", async () => {
    const seen: { phase: string; tx: string; visible: number; n: number }[] = [];
    const mine = <E extends { type: string }>(events: E[]) => events.filter((e) => e.type.startsWith("gc-"));
    const pipeline = eventsOf(t.app).pipeline;
    pipeline.preparing.push({
      name: "test",
      run: async (c, events) => {
        const m = mine(events);
        if (!m.length) return;
        const r = await c.query(
          "SELECT txid_current()::text AS tx, (SELECT count(*) FROM events WHERE type LIKE 'gc-%')::int AS visible",
        );
        seen.push({ phase: "preparing", tx: r.rows[0].tx, visible: r.rows[0].visible, n: m.length });
        for (const e of m) e.slots = { n1: 42.5, s2: "slot" };
      },
    });
    pipeline.committing.push({
      name: "test",
      run: async (c, events) => {
        const m = mine(events);
        if (!m.length) return;
        const r = await c.query(
          "SELECT txid_current()::text AS tx, (SELECT count(*) FROM events WHERE type LIKE 'gc-%')::int AS visible",
        );
        seen.push({ phase: "committing", tx: r.rows[0].tx, visible: r.rows[0].visible, n: m.length });
      },
    });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => ingestor.accept(p.projectId, [ev(`gc-${i}`), ev(`gc-${i}`)])),
    );
    assert.equal(results.flat().length, 20);
    const prep = seen.filter((s) => s.phase === "preparing");
    assert.ok(prep.length < 10, `10 concurrent callers shared transactions (${prep.length} flushes)`);
    for (const s of prep) {
      const commit = seen.find((x) => x.phase === "committing" && x.tx === s.tx)!;
      assert.ok(commit, "both hooks ran in the same transaction");
      assert.equal(commit.visible - s.visible, s.n, "preparing ran before the insert, committing after");
    }
    const rows = await db.query("SELECT n1, s2, id::text FROM events WHERE type LIKE 'gc-%'");
    assert.equal(rows.rows.length, 20);
    assert.ok(rows.rows.every((r) => r.n1 === 42.5 && r.s2 === "slot"));
    assert.deepEqual(new Set(rows.rows.map((r) => r.id)), new Set(results.flat().map((e) => e.id)));
  });

  it("rejects only the caller whose events a hook refuses; the others are stored", async () => {
    eventsOf(t.app).pipeline.committing.push({
      name: "test",
      run: async (_c, events) => {
        if (events.some((e) => e.type === "poison")) throw new Error("refused by hook");
      },
    });
    const calls = [
      ingestor.accept(p.projectId, [ev("fine-1")]),
      ingestor.accept(p.projectId, [ev("fine-2"), ev("poison")]),
      ingestor.accept(p.projectId, [ev("fine-3")]),
    ];
    const out = await Promise.allSettled(calls);
    assert.deepEqual(
      out.map((o) => o.status),
      ["fulfilled", "rejected", "fulfilled"],
    );
    const r = await db.query(
      "SELECT type FROM events WHERE type IN ('fine-1', 'fine-2', 'fine-3', 'poison') ORDER BY type",
    );
    assert.deepEqual(
      r.rows.map((x) => x.type),
      ["fine-1", "fine-3"],
      "no partial acceptance of the refused caller",
    );
  });

  it("creates weekly partitions on demand, also concurrently", async () => {
    const weeks = [Date.UTC(2021, 0, 4), Date.UTC(2021, 0, 11), Date.UTC(2021, 0, 18)];
    await Promise.all(
      weeks.flatMap((w) =>
        [0, 1, 2].map((k) => ingestor.accept(p.projectId, [ev("old", { timestamp: new Date(w + k * 3600_000) })])),
      ),
    );
    const r = await db.query(
      "SELECT relname FROM pg_class WHERE relname IN ('events_p20210104', 'events_p20210111', 'events_p20210118') ORDER BY 1",
    );
    assert.equal(r.rows.length, 3);
    const n = await db.query("SELECT count(*)::int AS n FROM events WHERE type = 'old'");
    assert.equal(n.rows[0].n, 9);
  });

  it("flushes what is queued when the feature stops", async () => {
    const t2 = await startTestApp({ INGEST_FLUSH_MS: "1000" });
    const p2 = await project(t2.rest);
    const ing = (t2.app.features.find((f) => f.name === "events") as unknown as { ingestor: Ingestor }).ingestor;
    const pending = Array.from({ length: 5 }, (_, i) => ing.accept(p2.projectId, [ev(`queued-${i}`)]));
    await t2.app.features.find((f) => f.name === "events")!.stop!();
    const stored = await Promise.all(pending);
    assert.equal(stored.length, 5);
    const c = new pg.Client({ connectionString: t2.databaseUrl });
    await c.connect();
    const n = await c.query("SELECT count(*)::int AS n FROM events WHERE type LIKE 'queued-%'");
    await c.end();
    assert.equal(n.rows[0].n, 5);
    await assert.rejects(ing.accept(p2.projectId, [ev("late")]));
    await t2.close();
  });
});
