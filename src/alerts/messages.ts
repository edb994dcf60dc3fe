import { fromJson, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { AlertEvaluationSchema, AlertSchema } from "../../gen/vigil/v1/alerts_pb.js";
import { withMonitor, type Evaluation, type Preview } from "./model.js";
import type { AlertRow } from "./store.js";

// Alert rows as the API's record (decisions.md: Alerts): the body's fields plus `id, monitorId,
// evaluationOffsetMs, state, value, lastEvaluatedAt, pendingSince, createdAt, updatedAt`. The state
// is read with the monitor's pause: a paused monitor's alert is `paused`.

const iso = (ms: number | null) => (ms === null ? undefined : new Date(ms).toISOString());

export function alertMessage(r: AlertRow, now: Date): MessageInitShape<typeof AlertSchema> {
  const s = withMonitor(
    r.state,
    { status: r.monitor_status, resumedAt: r.monitor_resumed_at?.getTime() ?? null },
    now.getTime(),
  );
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    query: fromJson(ValueSchema, r.query),
    condition: r.condition,
    windowMs: BigInt(r.window_ms),
    everyMs: BigInt(r.every_ms),
    forMs: BigInt(r.for_ms),
    resolve: r.resolve ? { ...r.resolve, forMs: BigInt(r.resolve.forMs) } : undefined,
    noData: r.no_data,
    minSamples: r.min_samples,
    monitorId: r.monitor_id,
    evaluationOffsetMs: BigInt(r.evaluation_offset_ms),
    state: s.state,
    value: s.value ?? undefined,
    lastEvaluatedAt: iso(s.lastEvaluatedAt),
    pendingSince: iso(s.pendingSince),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

export function evaluationMessage(e: Evaluation): MessageInitShape<typeof AlertEvaluationSchema> {
  return { at: new Date(e.at).toISOString(), value: e.value ?? undefined, state: e.state };
}

export function previewMessage(p: Preview) {
  return {
    evaluations: p.evaluations.map(evaluationMessage),
    incidents: p.incidents.map((i) => ({ startedAt: new Date(i.startedAt).toISOString(), endedAt: iso(i.endedAt) })),
  };
}
