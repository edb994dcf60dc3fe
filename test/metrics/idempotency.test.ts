import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { MetricsService } from "../../gen/vigil/v1/metrics_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, project } from "../helpers/fixtures.js";
import { useProject } from "../helpers/use.js";

// Idempotent metric points (decisions.md "Idempotent ingestion"): a point with a client `id` stored
// already in the project is answered as the first time (counted as accepted) and recorded nowhere
// again: not as an event, a point, a rollup or in the counter's total. REST and gRPC.

const { t, p } = useProject(GENEROUS_LIMITS);

const path = "/v1/projects/self/metrics";
const record = (body: unknown, key = p.key) => t.rest.post(path, body, { key });
const recordBatch = (metrics: unknown[], key = p.key) => t.rest.post(`${path}/batch`, { metrics }, { key });
const current = async (name: string) => {
  const r = await t.rest.post(`${path}/current`, { name }, { key: p.key });
  assert.equal(r.status, 200, r.text);
  return r.body.data.value;
};
/** Points, rollup count (minute level, 1) and $-events stored for a metric name. */
async function stored(name: string, projectId = p.projectId) {
  const q = (sql: string) => t.app.deps.db.query(sql, [projectId, name]).then((r) => r.rows[0].n as number);
  return {
    points: await q(
      "SELECT count(*)::int AS n FROM metric_points pt JOIN metrics m ON m.id = pt.metric_id WHERE m.project_id = $1 AND m.name = $2",
    ),
    rollupN: await q(
      "SELECT coalesce(sum(r.n), 0)::int AS n FROM metric_rollups r JOIN metrics m ON m.id = r.metric_id WHERE m.project_id = $1 AND m.name = $2 AND r.level = 1",
    ),
    events: await q("SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND data->>'name' = $2"),
  };
}

describe("idempotent metric points", () => {
  it("counts a retried increment once and answers it as the first time", async () => {
    const id = randomUUID();
    const body = { id, type: "increment", name: "idem_jobs", value: 5 };
    const first = await record(body);
    assert.equal(first.status, 201, first.text);
    for (let i = 0; i < 3; i++) {
      const again = await record(body);
      assert.equal(again.status, first.status);
      assert.deepEqual(again.body, first.body);
    }
    assert.equal(await current("idem_jobs"), 5);
    assert.deepEqual(await stored("idem_jobs"), { points: 1, rollupN: 1, events: 1 });
    // Without an id each call counts.
    await record({ type: "increment", name: "idem_jobs", value: 1 });
    await record({ type: "increment", name: "idem_jobs", value: 1 });
    assert.equal(await current("idem_jobs"), 7);
  });

  it("20 concurrent retries of one increment count once", async () => {
    const id = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => record({ id, type: "increment", name: "idem_race", value: 3 })),
    );
    for (const a of answers) assert.equal(a.status, 201, a.text);
    assert.equal(await current("idem_race"), 3);
    assert.deepEqual(await stored("idem_race"), { points: 1, rollupN: 1, events: 1 });
  });

  it("batches: a repeated id (in the batch or from before) is accepted and not stored again", async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const items = [
      { id: a, type: "increment", name: "idem_batch", value: 1 },
      { id: b, type: "increment", name: "idem_batch", value: 10 },
      { id: a, type: "increment", name: "idem_batch", value: 1 },
      { type: "increment", name: "idem_batch", value: 100 },
    ];
    const first = await recordBatch(items);
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(first.body.data, { accepted: 4, rejected: 0, errors: [] });
    assert.equal(await current("idem_batch"), 111);
    const second = await recordBatch(items);
    assert.deepEqual(second.body.data, first.body.data);
    assert.equal(await current("idem_batch"), 211, "only the item without an id counted again");
    assert.deepEqual(await stored("idem_batch"), { points: 4, rollupN: 4, events: 4 });
    // A single-route retry of a batch item's id is the same point.
    assert.equal((await record({ id: b, type: "increment", name: "idem_batch", value: 10 })).status, 201);
    assert.equal(await current("idem_batch"), 211);
  });

  it("keeps ids apart per project and per kind (an event's id is not a metric's)", async () => {
    const other = await project(t.rest);
    const id = randomUUID();
    assert.equal((await record({ id, type: "increment", name: "idem_kind", value: 1 })).status, 201);
    assert.equal((await record({ id, type: "increment", name: "idem_kind", value: 1 }, other.key)).status, 201);
    const ev = await t.rest.post("/v1/events", { id, type: "idem.kind" }, { key: p.key });
    assert.equal(ev.status, 202, ev.text);
    assert.equal(await current("idem_kind"), 1);
    assert.deepEqual(await stored("idem_kind", other.projectId), { points: 1, rollupN: 1, events: 1 });
    const n = await t.app.deps.db.query(
      "SELECT kind FROM ingest_ids WHERE project_id = $1 AND client_id = $2 ORDER BY kind",
      [p.projectId, id],
    );
    assert.deepEqual(
      n.rows.map((r) => r.kind),
      ["event", "metric"],
    );
  });

  it("refuses an id that is not a UUID: 400 naming id, a batch item alone", async () => {
    for (const id of ["", "nope", `${randomUUID()}x`, "__proto__", "\u0000", "z".repeat(70_000)]) {
      const r = await record({ id, type: "measurement", name: "idem_bad", value: 1 });
      assert.equal(r.status, 400, r.text.slice(0, 200));
      const e = errorBody(r);
      assert.equal(e.code, "validation_failed");
      assert.equal((e.details as { field: string }[])[0].field, "id");
    }
    for (const id of [7, false, ["x"]]) {
      const r = await record({ id, type: "measurement", name: "idem_bad", value: 1 });
      assert.equal(r.status, 400, r.text);
    }
    const b = await recordBatch([
      { id: "bad", type: "measurement", name: "idem_bad", value: 1 },
      { id: randomUUID(), type: "measurement", name: "idem_bad", value: 2 },
      { id: 12, type: "measurement", name: "idem_bad", value: 3 },
      { id: { constructor: 1 }, type: "measurement", name: "idem_bad", value: 4 },
    ]);
    assert.equal(b.status, 201, b.text);
    assert.equal(b.body.data.accepted, 1);
    assert.deepEqual(
      b.body.data.errors.map((e: { index: number; code: string; message: string }) => [e.index, e.code, e.message]),
      [
        [0, "validation_failed", "id: id must be a UUID (8-4-4-4-12 hexadecimal digits)"],
        [2, "validation_failed", "id: id must be a UUID (8-4-4-4-12 hexadecimal digits)"],
        [3, "validation_failed", "id: id must be a UUID (8-4-4-4-12 hexadecimal digits)"],
      ],
    );
    assert.deepEqual(await stored("idem_bad"), { points: 1, rollupN: 1, events: 1 });
  });

  it("over gRPC: a retried point counts once; a bad id is InvalidArgument", async () => {
    const c = createClient(MetricsService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${p.key}` };
    const id = randomUUID();
    const req = { projectId: "self", type: "increment", name: "idem_grpc", value: fromJson(ValueSchema, 2), id };
    assert.equal((await c.recordMetric(req, { headers })).data?.accepted, 1n);
    assert.equal((await c.recordMetric(req, { headers })).data?.accepted, 1n);
    const batch = await c.recordMetricBatch(
      { projectId: "self", metrics: [fromJson(ValueSchema, { id, type: "increment", name: "idem_grpc", value: 2 })] },
      { headers },
    );
    assert.equal(batch.data?.accepted, 1n);
    assert.equal(await current("idem_grpc"), 2);
    await assert.rejects(
      c.recordMetric({ ...req, id: "nope" }, { headers }),
      (e: unknown) =>
        e instanceof ConnectError && e.code === Code.InvalidArgument && /id must be a UUID/.test(e.message),
    );
  });
});
