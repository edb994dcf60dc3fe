import assert from "node:assert/strict";
import { describe, it } from "node:test";
import ts from "typescript";
import { at, describeDiagnostic, typecheck } from "../helpers/typecheck.js";

// The extension points are tables (docs/architecture.md, "One template per feature"): a new entry
// must be a compile error at every switch that has to say what it means, never a silent
// fall-through. This adds one entry to each table, in memory, and type-checks src/ with the
// project's tsconfig: the new entries must be reported at exactly the switches their tables name
// (an argument not assignable to assertNever's `never`), nowhere else, and the unchanged tree must
// compile (so the test fails in both directions). One program for the four tables (one type check).

interface Extension {
  table: string;
  file: string;
  /** A line of the table after which the new entry goes, and the entry. */
  after: string;
  entry: string;
  /** The new member's name. */
  member: string;
  /** Where a switch must now fail (files relative to the root). */
  switches: string[];
}

const EXTENSIONS: Extension[] = [
  {
    table: "analytics filter operators (OPERATORS)",
    file: "src/analytics/filters.ts",
    after: '  not_exists: "none",\n',
    entry: '  matches_regex: "text",\n',
    member: "matches_regex",
    switches: ["src/analytics/compile.ts", "src/analytics/blocks/eval.ts"],
  },
  {
    table: "analytics aggregations (AGGREGATIONS)",
    file: "src/analytics/aggregations.ts",
    after: "  max: { numeric: true },\n",
    entry: "  variance: { numeric: true },\n",
    member: "variance",
    switches: ["src/analytics/aggregations.ts", "src/analytics/queries.ts", "src/analytics/blocks/engine.ts"],
  },
  {
    table: "metric aggregations (AGGREGATIONS, a moment)",
    file: "src/metrics/model.ts",
    after: '  count: { kind: "moment" },\n',
    entry: '  stddev: { kind: "moment" },\n',
    member: "stddev",
    switches: ["src/metrics/model.ts"],
  },
  {
    table: "event field kinds (FieldKind)",
    file: "src/events/record.ts",
    after: '"time" | "object"',
    entry: ' | "number"',
    member: "number",
    switches: ["src/events/record.ts", "src/events/write.ts"],
  },
];

describe("extension tables: a new entry is a compile error at every switch over its table", () => {
  it("src/ compiles as it is (the baseline of the next check)", () => {
    assert.deepEqual(typecheck(new Map()).map(describeDiagnostic), []);
  });

  it("one new entry per table: tsc names each switch that must handle it, and nothing else", () => {
    const overrides = new Map<string, string>();
    for (const x of EXTENSIONS) {
      const text = ts.sys.readFile(at(x.file))!;
      assert.ok(text.includes(x.after), `${x.file} still has the line '${x.after.trim()}' (update this test)`);
      overrides.set(at(x.file), (overrides.get(at(x.file)) ?? text).replace(x.after, x.after + x.entry));
    }
    const diagnostics = typecheck(overrides).map(describeDiagnostic);
    for (const x of EXTENSIONS) {
      for (const file of x.switches) {
        assert.ok(
          diagnostics.some(
            (d) => d.startsWith(`${file}:`) && d.includes("is not assignable to parameter of type 'never'"),
          ),
          `adding '${x.member}' to the ${x.table} is not a compile error in ${file}:\n${diagnostics.join("\n")}`,
        );
      }
    }
    const expected = new Set(EXTENSIONS.flatMap((x) => x.switches));
    const elsewhere = diagnostics.filter((d) => !expected.has(d.slice(0, d.indexOf(":"))));
    assert.deepEqual(elsewhere, [], "errors outside the switches the tables name");
  });
});
