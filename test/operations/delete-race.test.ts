// Deleting a project while its writes are in flight: every write answers either as accepted (it
// committed before the delete) or as a request after the delete would (401 for its API key, which
// the delete removed; 404 for a member session). Never a 5xx: a foreign-key violation or deadlock
// against the delete is not a server error.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { useApp } from "../helpers/use.js";

const { t } = useApp({ PG_POOL_SIZE: "8", ...GENEROUS_LIMITS });

type Write = (p: ProjectFixture, n: number) => Promise<{ status: number; text: string }>;

/** Every write path that inserts rows referring to the project (or to its monitors and metrics). */
const WRITES: Record<string, Write> = {
  // Known monitors (fast compare-and-set path) and new slugs (the locked path inserts a monitor).
  heartbeatKnown: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/heartbeats/known-${n % 4}`,
      { status: n % 7 === 0 ? "down" : "up", metadata: { n } },
      { key: p.key },
    ),
  heartbeatNew: (p, n) => t.rest.post(`/v1/projects/${p.projectId}/heartbeats/new-${n}`, {}, { key: p.key }),
  // A registered metric (points and rollups) and new names (the registry insert).
  metricKnown: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "measurement", name: "latency", value: n },
      { key: p.key },
    ),
  metricNew: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/metrics`,
      { type: "increment", name: `count-${n}`, value: 1 },
      { key: p.key },
    ),
  metricBatch: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/metrics/batch`,
      {
        metrics: Array.from({ length: 20 }, (_, i) => ({
          type: "measurement",
          name: i % 2 ? "latency" : `batch-${n}-${i}`,
          value: i,
        })),
      },
      { key: p.key },
    ),
  // Events with new sources (a sources insert) and users (derived rows).
  event: (p, n) =>
    t.rest.post("/v1/events", { type: "race", source: `src-${n}`, userId: `u-${n % 5}` }, { key: p.key }),
  eventBatch: (p, n) =>
    t.rest.post(
      "/v1/events/batch",
      {
        events: Array.from({ length: 10 }, (_, i) => ({
          type: "$group",
          groupId: `g-${n}-${i}`,
          source: `bs-${n % 3}`,
          data: { i },
        })),
      },
      { key: p.key },
    ),
  identify: (p, n) =>
    t.rest.post(
      `/v1/projects/${p.projectId}/identify`,
      { externalId: `id-${n}`, properties: { n } },
      { cookie: p.owner.cookie },
    ),
};

async function round(kinds: string[]): Promise<Map<number, number>> {
  const p = await project(t.rest);
  // Warm the paths: known monitors and a registered metric.
  for (let i = 0; i < 4; i++) assert.equal((await WRITES.heartbeatKnown(p, i)).status, 200);
  assert.equal((await WRITES.metricKnown(p, 0)).status, 201);

  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let deletedAt = 0;
  let counter = 0;
  const worker = async (kind: string) => {
    // Keep writing until well after the delete has answered.
    while (deletedAt === 0 || Date.now() - deletedAt < 150) {
      const r = await WRITES[kind](p, counter++);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      if (r.status >= 500 || ![200, 201, 202, 401, 404].includes(r.status))
        failures.push(`${kind} ${r.status} ${r.text}`);
    }
  };
  const workers = kinds.flatMap((k) => [worker(k), worker(k)]);
  await new Promise((r) => setTimeout(r, 150));
  const del = await t.rest.del(`/v1/projects/${p.projectId}`, { cookie: p.owner.cookie });
  deletedAt = Date.now();
  assert.equal(del.status, 204, del.text);
  await Promise.all(workers);
  assert.deepEqual(failures.slice(0, 5), [], `statuses ${JSON.stringify([...statuses])}`);
  return statuses;
}

describe("deleting a project under write load", () => {
  it("answers every in-flight heartbeat, metric, event and identify write without a 5xx", async () => {
    const total = new Map<number, number>();
    for (let i = 0; i < 6; i++) {
      for (const [s, n] of await round(Object.keys(WRITES))) total.set(s, (total.get(s) ?? 0) + n);
    }
    // The race really ran: writes were accepted before the delete and refused after it.
    assert.ok((total.get(401) ?? 0) > 0 && (total.get(404) ?? 0) > 0, JSON.stringify([...total]));
    assert.ok((total.get(200) ?? 0) + (total.get(201) ?? 0) + (total.get(202) ?? 0) > 50, JSON.stringify([...total]));
  });

  it("heartbeats and metrics alone, many at once, against the delete", async () => {
    for (let i = 0; i < 6; i++)
      await round(["heartbeatKnown", "heartbeatNew", "heartbeatNew", "metricNew", "metricKnown", "metricBatch"]);
  });
});
