import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkEvent, eventRules } from "../../src/events/validate.js";

// checkEvent (hand-written: the ingestion hot path) and eventRules (the zod schema the OpenAPI
// document states for an event) give the same verdict, case by case, for every rule eventRules
// states. What it does not state (timestamp range, $identify's userId, the size) is left out here.

const now = new Date("2026-01-01T00:00:00Z");
const ID = "0190a0a0-1234-7abc-8def-0123456789ab";
const CASES: [string, unknown][] = [
  ["minimal", { type: "signup" }],
  [
    "everything",
    {
      id: ID,
      type: "x",
      timestamp: "2025-12-31T23:00:00Z",
      userId: "u",
      groupId: "g",
      source: "s",
      data: { a: 1 },
      context: {},
      tags: { t: "v" },
    },
  ],
  [
    "nulls",
    {
      type: "x",
      id: null,
      timestamp: null,
      userId: null,
      groupId: null,
      source: null,
      data: null,
      context: null,
      tags: null,
    },
  ],
  ["uppercase id", { type: "x", id: ID.toUpperCase() }],
  ["id not a uuid", { type: "x", id: "abc" }],
  ["id empty", { type: "x", id: "" }],
  ["id a number", { type: "x", id: 1 }],
  ["no type", {}],
  ["type empty", { type: "" }],
  ["type blank", { type: "   " }],
  ["type null", { type: null }],
  ["type a number", { type: 3 }],
  ["type 200", { type: "a".repeat(200) }],
  ["type 201", { type: "a".repeat(201) }],
  ["type $page", { type: "$page" }],
  ["type $error", { type: "$error" }],
  ["type $pageview", { type: "$pageview" }],
  ["type $measure", { type: "$measure" }],
  ["type $", { type: "$" }],
  ["type spaced $", { type: " $x" }],
  ["type NUL", { type: "a\u0000b" }],
  ["userId 256", { type: "x", userId: "u".repeat(256) }],
  ["userId 257", { type: "x", userId: "u".repeat(257) }],
  ["userId empty", { type: "x", userId: "" }],
  ["userId a number", { type: "x", userId: 5 }],
  ["source NUL", { type: "x", source: "\u0000" }],
  ["data a list", { type: "x", data: [1] }],
  ["data a string", { type: "x", data: "s" }],
  ["tags nested", { type: "x", tags: { a: { b: [1, "c"] } } }],
  ["unknown key", { type: "x", properties: {} }],
  ["timestamp a number", { type: "x", timestamp: 1 }],
];

describe("checkEvent and the documented event rules agree", () => {
  for (const [name, raw] of CASES)
    it(name, () => {
      const fast = checkEvent(raw, now, "secret");
      const stated = eventRules.safeParse(raw);
      assert.equal(
        stated.success,
        fast.ok,
        `${name}: checkEvent ${fast.ok ? "accepts" : "refuses"} it, the rules ${stated.success ? "accept" : "refuse"} it`,
      );
    });
});
