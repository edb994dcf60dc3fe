import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import ts from "typescript";

// The extension points are tables (docs/architecture.md, "One template per feature"): a new entry
// must be a compile error at every switch that has to say what it means, never a silent
// fall-through. This adds one entry to each table, in memory, and type-checks src/ with the
// project's tsconfig: the new entries must be reported at exactly the switches their tables name
// (an argument not assignable to assertNever's `never`), nowhere else, and the unchanged tree must
// compile (so the test fails in both directions). One program for all the tables (one type check).

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const at = (p: string) => path.join(ROOT, p);

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
    table: "alert comparison operators (OPERATORS)",
    file: "src/alerts/model.ts",
    after: '"lt", "lte"',
    entry: ', "eq"',
    member: "eq",
    switches: ["src/alerts/model.ts"],
  },
  {
    table: "alert no-data policies (NO_DATA_POLICIES)",
    file: "src/alerts/model.ts",
    after: '"alerting", "keep"',
    entry: ', "last"',
    member: "last",
    switches: ["src/alerts/model.ts"],
  },
];

function typecheck(overrides: Map<string, string>): readonly ts.Diagnostic[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    at("tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, "\n")),
    },
  )!;
  const host = ts.createCompilerHost(config.options);
  const readFile = host.readFile.bind(host);
  host.readFile = (f) => overrides.get(path.resolve(f)) ?? readFile(f);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (f, lang, onError) => {
    const text = overrides.get(path.resolve(f));
    return text === undefined ? getSourceFile(f, lang, onError) : ts.createSourceFile(f, text, lang);
  };
  const roots = config.fileNames.filter((f) => path.resolve(f).startsWith(at("src") + path.sep));
  const program = ts.createProgram({ rootNames: roots, options: config.options, host });
  return ts.getPreEmitDiagnostics(program);
}

const describeDiagnostic = (d: ts.Diagnostic) =>
  `${d.file ? path.relative(ROOT, d.file.fileName) : "?"}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;

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
