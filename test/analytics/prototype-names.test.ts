import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assignSlots, backfillSlots } from "../../src/analytics/assign.js";
import { buildPending } from "../../src/analytics/blocks/build.js";
import { eventsOf, metricOf } from "../helpers/app.js";
import { ingest } from "../helpers/events.js";
import { useProject } from "../helpers/use.js";

// Data keys named like JavaScript prototype members are data keys like any other: filtered,
// grouped and unique-counted by their bare names over REST, with the same answers on the JSON
// path, then through typed slots and column blocks.

const KEYS = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"] as const;
const H = 3_600_000;
const T0 = Date.UTC(2024, 4, 6, 8);
const TIME = { start: new Date(T0).toISOString(), end: new Date(T0 + 2 * H - 1).toISOString() };

// Built from JSON text: an object literal would turn `__proto__` into the prototype.
const EVENTS: { type: string; timestamp: string; data: Record<string, unknown> }[] = Array.from(
  { length: 24 },
  (_, i) =>
    JSON.parse(
      JSON.stringify({ type: i % 2 ? "view" : "buy", timestamp: new Date(T0 + i * 5 * 60_000).toISOString() }).replace(
        /}$/,
        `,"data":${dataText(i)}}`,
      ),
    ),
);
function dataText(i: number): string {
  const parts = [
    `"constructor":${JSON.stringify(["a", "b", "a"][i % 3])}`,
    `"toString":${i % 4}`,
    `"__proto__":${JSON.stringify(i < 10 ? "x" : "y")}`,
    ...(i % 3 === 0 ? [`"hasOwnProperty":"yes"`] : []),
    `"valueOf":${i}`,
  ];
  return `{${parts.join(",")}}`;
}
const own = (e: (typeof EVENTS)[number], k: string) =>
  Object.hasOwn(e.data, k) ? Object.getOwnPropertyDescriptor(e.data, k)!.value : undefined;

const post = (route: string, body: unknown) =>
  t.rest.post(`/v1/projects/${p.projectId}/${route}`, body, { key: p.key });
const blockQueries = async () =>
  (await metricOf(t.app, "vigil_analytics_block_queries_total").get()).values.find((v) => v.labels.outcome === "blocks")
    ?.value ?? 0;

const { t, p } = useProject(
  { RATE_LIMIT_EVENTS_PER_MINUTE: "100000", ANALYTICS_SLOT_INTERVAL_MS: "0", ANALYTICS_BLOCK_INTERVAL_MS: "0" },
  {},
  async () => {
    assert.ok(Object.hasOwn(EVENTS[0].data, "__proto__"));
    await ingest(t.rest, p.key, EVENTS);
  },
);

/** Every answer checked against the events as sent. */
async function checkAll(label: string): Promise<void> {
  for (const k of KEYS) {
    const values = [...new Set(EVENTS.map((e) => own(e, k)).filter((v) => v !== undefined))];
    for (const v of values) {
      for (const field of [k, `data.${k}`]) {
        const r = await post("analytics/count", { time: TIME, filters: { field, operator: "equals", value: v } });
        assert.equal(r.status, 200, `${label} ${field}=${v}: ${r.text}`);
        assert.equal(r.body.data.count, EVENTS.filter((e) => own(e, k) === v).length, `${label} count ${field}=${v}`);
      }
    }
    const ex = await post("analytics/count", { time: TIME, filters: { field: k, operator: "exists" } });
    assert.equal(ex.body.data.count, EVENTS.filter((e) => own(e, k) !== undefined).length, `${label} exists ${k}`);

    const expected = new Map<string, number>();
    for (const e of EVENTS) {
      const key = JSON.stringify(own(e, k) ?? null);
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    const g = await post("analytics/group", { time: TIME, groupBy: [k], limit: 1000 });
    assert.equal(g.status, 200, `${label} group ${k}: ${g.text}`);
    const got = new Map<string, number>(
      g.body.data.groups.map((x: Record<string, unknown>) => {
        assert.ok(Object.hasOwn(x, k), `${label} group key ${k} in ${JSON.stringify(x)}`);
        assert.deepEqual(Object.keys(x), [k, "count"]);
        return [JSON.stringify(Object.getOwnPropertyDescriptor(x, k)!.value), x.count as number];
      }),
    );
    assert.deepEqual(got, expected, `${label} group ${k}`);

    const u = await post("analytics/unique", { time: TIME, field: k, limit: 1000 });
    assert.equal(u.status, 200, `${label} unique ${k}: ${u.text}`);
    expected.delete("null");
    assert.deepEqual(
      new Map(u.body.data.values.map((x: { value: unknown; count: number }) => [JSON.stringify(x.value), x.count])),
      expected,
      `${label} unique ${k}`,
    );
  }
  const two = await post("analytics/group", { time: TIME, groupBy: ["constructor", "__proto__"], limit: 1000 });
  assert.equal(two.status, 200, two.text);
  const ax = two.body.data.groups.find(
    (x: Record<string, unknown>) =>
      Object.getOwnPropertyDescriptor(x, "constructor")?.value === "a" &&
      Object.getOwnPropertyDescriptor(x, "__proto__")?.value === "x",
  );
  assert.equal(
    ax?.count,
    EVENTS.filter((e) => own(e, "constructor") === "a" && own(e, "__proto__") === "x").length,
    `${label} two keys`,
  );

  const gt = await post("analytics/count", {
    time: TIME,
    filters: {
      and: [
        { field: "toString", operator: "gt", value: 1 },
        { field: "__proto__", operator: "in", value: ["y"] },
      ],
    },
  });
  assert.equal(
    gt.body.data.count,
    EVENTS.filter((e) => (own(e, "toString") as number) > 1 && own(e, "__proto__") === "y").length,
    `${label} gt/in`,
  );
  const agg = await post("analytics/aggregate", {
    time: TIME,
    aggregations: [
      { name: "s", operation: "sum", field: "valueOf" },
      { name: "u", operation: "count_unique", field: "constructor" },
    ],
  });
  assert.equal(agg.status, 200, agg.text);
  assert.deepEqual(agg.body.data.results, [
    { name: "s", value: EVENTS.reduce((a, e) => a + (own(e, "valueOf") as number), 0) },
    { name: "u", value: 2 },
  ]);
}

describe("prototype-member names as data keys", () => {
  it("the stored events keep every key", async () => {
    const r = await t.rest.get(`/v1/projects/self/events?limit=1`, { key: p.key });
    assert.equal(r.status, 200, r.text);
    for (const k of KEYS.filter((k) => k !== "hasOwnProperty"))
      assert.ok(Object.hasOwn(r.body.data[0].data, k), `${k} in ${r.text}`);
  });

  it("are filtered, grouped and unique-counted by their bare names on the JSON path", async () => {
    await checkAll("json");
  });

  it("give the same answers through typed slots and column blocks", async () => {
    const db = t.app.deps.db;
    const assigned = await assignSlots(db, p.projectId, new Date(), { sample: 10_000, minShare: 0.01 });
    assert.deepEqual([...assigned].sort(), [...KEYS].sort());
    await backfillSlots(db, p.projectId, new Date());
    await eventsOf(t.app).derived.settle(p.projectId);
    const built = await buildPending(db, p.projectId, () => new Date(), { sealMs: 0, rebuildMs: 0 });
    assert.equal(built.built, 2);
    await new Promise((r) => setTimeout(r, 2100)); // the planner's slot cache (2 s)
    const before = await blockQueries();
    await checkAll("blocks");
    assert.ok((await blockQueries()) - before > 20, "the block path answered");
  });
});
