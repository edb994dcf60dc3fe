import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkMetric, metricRules } from "../../src/metrics/validate.js";

// checkMetric (hand-written: the recording hot path) and metricRules (the zod schema the OpenAPI
// document states for a metric point) give the same verdict, case by case, for every rule
// metricRules states. What it leaves to prose (alsoRefused: the timestamp range, a counter change's
// sign, the tags' bounds) is left out here.

const now = new Date("2026-01-01T00:00:00Z");
const ID = "0190a0a0-1234-7abc-8def-0123456789ab";
const CASES: [string, unknown][] = [
  ["minimal", { type: "measurement", name: "cpu", value: 1 }],
  [
    "everything",
    {
      id: ID,
      type: "increment",
      name: "jobs",
      value: 2,
      unit: "count",
      timestamp: "2025-12-31T23:00:00Z",
      tags: { host: "a", n: 1, ok: true },
    },
  ],
  ["nulls", { type: "measurement", name: "cpu", value: 1, id: null, unit: null, timestamp: null, tags: null }],
  ["no type", { name: "cpu", value: 1 }],
  ["type unknown", { type: "gauge", name: "cpu", value: 1 }],
  ["type a number", { type: 1, name: "cpu", value: 1 }],
  ["no name", { type: "measurement", value: 1 }],
  ["name empty", { type: "measurement", name: "", value: 1 }],
  ["name blank", { type: "measurement", name: "   ", value: 1 }],
  ["name $", { type: "measurement", name: "$cpu", value: 1 }],
  ["name 200", { type: "measurement", name: "n".repeat(200), value: 1 }],
  ["name 201", { type: "measurement", name: "n".repeat(201), value: 1 }],
  ["name a control character", { type: "measurement", name: "a\u0001", value: 1 }],
  ["name a number", { type: "measurement", name: 5, value: 1 }],
  ["no value", { type: "measurement", name: "cpu" }],
  ["value null", { type: "measurement", name: "cpu", value: null }],
  ["value a string", { type: "measurement", name: "cpu", value: "1" }],
  ["unit 50", { type: "measurement", name: "cpu", value: 1, unit: "u".repeat(50) }],
  ["unit 51", { type: "measurement", name: "cpu", value: 1, unit: "u".repeat(51) }],
  ["unit a control character", { type: "measurement", name: "cpu", value: 1, unit: "\u0007" }],
  ["unit a number", { type: "measurement", name: "cpu", value: 1, unit: 3 }],
  ["id not a uuid", { type: "measurement", name: "cpu", value: 1, id: "abc" }],
  ["id a number", { type: "measurement", name: "cpu", value: 1, id: 1 }],
  ["timestamp a number", { type: "measurement", name: "cpu", value: 1, timestamp: 1 }],
  ["tags a list", { type: "measurement", name: "cpu", value: 1, tags: [1] }],
  ["unknown key", { type: "measurement", name: "cpu", value: 1, labels: {} }],
];

describe("checkMetric and the documented metric rules agree", () => {
  for (const [name, raw] of CASES)
    it(name, () => {
      const fast = checkMetric(raw, now);
      const stated = metricRules.safeParse(raw);
      assert.equal(
        stated.success,
        fast.ok,
        `${name}: checkMetric ${fast.ok ? "accepts" : "refuses"} it, the rules ${stated.success ? "accept" : "refuse"} it`,
      );
    });
});
