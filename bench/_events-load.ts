import { assignSlots, backfillSlots } from "../src/analytics/assign.js";
import { rebuildRollups } from "../test/helpers/backfill.js";
import { ensurePartitions, weekStart } from "../src/events/partitions.js";
import type { Db } from "../src/storage/db.js";

// Bulk loading of generated events for the benches that need millions of them (analytics,
// dashboard): straight SQL from a generator query, then the service's own backfills, so the
// analytics answer from rollups and slots as they would after ingestion.

const DAY = 86_400_000;
const WEEK = 7 * DAY;
const CHUNK = 500_000;

export interface Generated {
  /** The weekly partitions' starts the events fall in (ms). */
  weeks: number[];
  /** The properties the slot registry assigned on the first sample. */
  assigned: string[];
  loadS: number;
}

/**
 * Inserts `events` rows of `gen` for `projectId`, spread over [start, start + spanMs). `gen` is a
 * SELECT of the events table's columns (project_id, ts, id, type, user_id, data, context, tags)
 * with parameters $1 project id, $2 start, $3 span in ms, $4..$5 the row numbers to make.
 * A first sample is inserted and the registry assigns slots on it; the rest is inserted with the
 * slot columns filled by the same expressions the backfill uses (what the ingest hook does for
 * new events), so the backfill (`finishBackfill`) only rewrites the sample.
 */
export async function loadGenerated(
  db: Db,
  projectId: string,
  gen: string,
  opts: { events: number; start: number; spanMs: number; progress?: boolean },
): Promise<Generated> {
  const end = opts.start + opts.spanMs;
  const weeks: number[] = [];
  for (let w = weekStart(opts.start); w <= end; w += WEEK) weeks.push(w);
  const c = await db.connect();
  try {
    await ensurePartitions(c, weeks);
  } finally {
    c.release();
  }
  const t0 = performance.now();
  const params = (a: number, b: number) => [projectId, new Date(opts.start), opts.spanMs, a, b];
  const sample = Math.min(opts.events, 20_000);
  await db.query(
    `INSERT INTO events (project_id, ts, id, type, user_id, data, context, tags) SELECT * FROM (${gen}) x`,
    params(1, sample),
  );
  const assigned = await assignSlots(db, projectId, new Date(), { sample: 20_000, minShare: 0.01 });
  const props = (
    await db.query<{ key: string; kind: "n" | "s"; slot: number }>(
      "SELECT key, kind, slot FROM analytics_properties WHERE project_id = $1",
      [projectId],
    )
  ).rows;
  const slotCols = props.map((x) => `, ${x.kind}${x.slot}`).join("");
  const slotExprs = props
    .map((x) => {
      const k = `'${x.key.replace(/'/g, "''")}'`;
      return x.kind === "n"
        ? `, CASE WHEN jsonb_typeof(data -> ${k}) = 'number' THEN (data ->> ${k})::float8 END`
        : `, CASE WHEN jsonb_typeof(data -> ${k}) = 'string' THEN data ->> ${k} END`;
    })
    .join("");
  for (let a = sample + 1; a <= opts.events; a += CHUNK) {
    const b = Math.min(opts.events, a + CHUNK - 1);
    await db.query(
      `INSERT INTO events (project_id, ts, id, type, user_id, data, context, tags${slotCols})
       SELECT project_id, ts, id, type, user_id, data, context, tags${slotExprs} FROM (${gen}) x`,
      params(a, b),
    );
    if (opts.progress !== false) process.stdout.write(".");
  }
  return { weeks, assigned, loadS: (performance.now() - t0) / 1000 };
}

/** The service's backfills after a bulk load: rollups over the range (a day either side), then the slots. */
export async function finishBackfill(
  db: Db,
  projectId: string,
  range: { start: number; end: number },
): Promise<{ rollupsS: number; slotsS: number }> {
  let t0 = performance.now();
  await rebuildRollups(db, projectId, new Date(range.start - DAY), new Date(range.end + DAY));
  const rollupsS = (performance.now() - t0) / 1000;
  t0 = performance.now();
  await backfillSlots(db, projectId, new Date());
  const pending = (
    await db.query("SELECT key FROM analytics_properties WHERE project_id = $1 AND state <> 'active'", [projectId])
  ).rows;
  if (pending.length) throw new Error(`slots not active after the backfill: ${pending.map((r) => r.key).join(", ")}`);
  return { rollupsS, slotsS: (performance.now() - t0) / 1000 };
}
