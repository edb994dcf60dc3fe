import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { filterSql } from "../../src/analytics/compile.js";
import { resolveField } from "../../src/analytics/fields.js";
import { parseFilters } from "../../src/analytics/filters.js";
import { rollupEligible } from "../../src/analytics/plan.js";
import { Params, NO_SLOTS, type SlotMap } from "../../src/analytics/sql.js";
import { bucketStarts, decompose, parseInstant, parseWindow, truncate } from "../../src/analytics/time.js";
import { ApiError } from "../../src/shared/errors.js";

// Pure parts of the query model: field grammar, filter parsing, SQL compilation, time math.

const bad = (fn: () => unknown) => assert.throws(fn, (e) => e instanceof ApiError && e.status === 400);
const compile = (f: unknown, slots: SlotMap = NO_SLOTS) => {
  const params = new Params();
  return { sql: filterSql({ params, alias: "e", slots }, parseFilters(f)), params: params.values };
};
const nest = (depth: number): unknown => {
  let n: unknown = { field: "event", operator: "equals", value: "x" };
  for (let i = 0; i < depth; i++) n = { and: [n] };
  return n;
};

describe("fields", () => {
  it("resolves aliases, typed columns and JSON paths", () => {
    assert.deepEqual(resolveField("event"), { kind: "column", column: "type", valueType: "text", name: "event" });
    assert.equal((resolveField("createdAt") as { column: string }).column, "created_at");
    assert.equal((resolveField("timestamp") as { column: string }).column, "ts");
    for (const [name, column, path] of [
      ["plan", "data", ["plan"]],
      ["data.plan", "data", ["plan"]],
      ["a.b.c", "data", ["a", "b", "c"]],
      ["context.page.path", "context", ["page", "path"]],
      ["tags.env", "tags", ["env"]],
      ["data", "data", ["data"]],
    ] as const)
      assert.deepEqual(resolveField(name), { kind: "json", column, path, name });
  });
  it("refuses hostile or malformed names", () => {
    for (const n of [
      "",
      "a..b",
      ".a",
      "a.",
      "a b",
      "x'; DROP TABLE events;--",
      'a"b',
      "a\\b",
      "a;b",
      "é",
      "a".repeat(600),
      42,
      null,
    ])
      bad(() => resolveField(n));
  });
});

describe("filters", () => {
  it("accepts five nested groups and refuses a sixth", () => {
    assert.doesNotThrow(() => parseFilters(nest(5)));
    bad(() => parseFilters(nest(6)));
  });
  it("enforces the value rules of each operator", () => {
    const ok = [
      { field: "a", operator: "in", value: [1, "x", true] },
      { field: "a", operator: "exists" },
      { field: "a", operator: "gt", value: 3 },
      { field: "a", operator: "lt", value: "2024-01-01T00:00:00+02:00" },
      { field: "timestamp", operator: "gte", value: "2024-01-01T00:00:00Z" },
      { field: "a", operator: "contains", value: "" },
    ];
    for (const f of ok) assert.doesNotThrow(() => parseFilters(f), JSON.stringify(f));
    const ko = [
      { field: "a", operator: "in", value: 1 },
      { field: "a", operator: "in", value: [] },
      { field: "a", operator: "exists", value: 1 },
      { field: "a", operator: "gt", value: "abc" },
      { field: "a", operator: "gt", value: true },
      { field: "timestamp", operator: "gt", value: 5 },
      { field: "a", operator: "gt", value: "2024-01-01T00:00:00" },
      { field: "a", operator: "contains", value: 1 },
      { field: "a", operator: "equals", value: null },
      { field: "a", operator: "equals", value: { x: 1 } },
      { field: "a", operator: "like", value: "x" },
      { field: "a", operator: "equals" },
      { field: "a", operator: "equals", value: 1, extra: 1 },
      { and: [], or: [] },
      { and: 1 },
      "x",
      5,
      { field: "timestamp", operator: "contains", value: "2024" },
      { field: "createdAt", operator: "equals", value: "yesterday" },
    ];
    for (const f of ko) bad(() => parseFilters(f));
  });
});

describe("compiler", () => {
  it("binds every value and JSON path; nothing from the request reaches the SQL text", () => {
    const hostile = "'; DROP TABLE events; --\\\"";
    const { sql, params } = compile({
      or: [
        { field: "data.x-y.z", operator: "equals", value: hostile },
        { field: "note", operator: "contains", value: hostile },
      ],
    });
    assert.ok(!sql.includes("DROP") && !sql.includes("x-y"), sql);
    assert.deepEqual(params, [["x-y", "z"], JSON.stringify(hostile), ["note"], hostile]);
  });
  it("reads slots only when the value's type matches the slot", () => {
    const slots: SlotMap = { n: new Map([["amount", "n1"]]), s: new Map([["plan", "s2"]]) };
    assert.match(compile({ field: "amount", operator: "gt", value: 5 }, slots).sql, /e\.n1 > \$1::float8/);
    assert.match(compile({ field: "data.plan", operator: "in", value: ["a", "b"] }, slots).sql, /e\.s2 = ANY/);
    assert.doesNotMatch(compile({ field: "plan", operator: "equals", value: 5 }, slots).sql, /s2/);
    assert.doesNotMatch(compile({ field: "amount", operator: "exists" }, slots).sql, /n1/);
  });
  it("lets rollups answer only type/time filters", () => {
    assert.equal(rollupEligible(null), true);
    assert.equal(
      rollupEligible(
        parseFilters({
          or: [
            { field: "event", operator: "equals", value: "a" },
            { field: "type", operator: "starts_with", value: "b" },
          ],
        }),
      ),
      true,
    );
    assert.equal(rollupEligible(parseFilters({ field: "userId", operator: "exists" })), false);
  });
});

describe("time", () => {
  it("requires a timezone and a valid calendar date", () => {
    assert.equal(parseInstant("2024-01-01T00:00:00"), null);
    assert.equal(parseInstant("2024-02-30T00:00:00Z"), null);
    assert.equal(parseInstant("2024-01-01T02:00:00+02:00")!.ms, Date.UTC(2024, 0, 1));
    bad(() => parseWindow({ start: "2024-01-02T00:00:00Z", end: "2024-01-01T00:00:00Z" }, true));
    bad(() => parseWindow(undefined, true));
    assert.equal(parseWindow(undefined, false), null);
  });
  it("buckets weeks from Monday and months from the 1st, in UTC", () => {
    assert.equal(new Date(truncate(Date.UTC(2024, 0, 7, 23, 59), "week")).toISOString(), "2024-01-01T00:00:00.000Z");
    assert.equal(new Date(truncate(Date.UTC(2024, 0, 8), "week")).toISOString(), "2024-01-08T00:00:00.000Z");
    assert.equal(new Date(truncate(Date.UTC(2024, 1, 29, 12), "month")).toISOString(), "2024-02-01T00:00:00.000Z");
    const w = parseWindow({ start: "2024-01-31T10:00:00Z", end: "2024-03-01T00:00:00Z" }, true)!;
    assert.deepEqual(
      bucketStarts(w, "month", 100).map((b) => new Date(b).toISOString().slice(0, 10)),
      ["2024-01-01", "2024-02-01", "2024-03-01"],
    );
  });
  it("decomposes a window into contiguous rollup buckets and raw edges", () => {
    for (let i = 0; i < 500; i++) {
      const a = Date.UTC(2024, 0, 1) + Math.floor(Math.random() * 10 * 86_400_000);
      const b = a + Math.floor(Math.random() * 5 * 86_400_000);
      const w = parseWindow({ start: new Date(a).toISOString(), end: new Date(b).toISOString() }, true)!;
      for (const g of ["minute", "hour", "day"] as const) {
        const ps = decompose(w, g);
        assert.equal(ps[0].from, a);
        assert.equal(ps[ps.length - 1].to, b + 1);
        for (let k = 1; k < ps.length; k++) assert.equal(ps[k].from, ps[k - 1].to);
        for (const p of ps) if (p.grain !== "raw") assert.ok(p.from >= a && p.to <= b);
      }
    }
  });
});
