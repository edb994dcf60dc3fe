import assert from "node:assert/strict";
import { describe, it } from "node:test";
import ts from "typescript";
import {
  COLUMN_ALIASES,
  CSV_DEFAULT_FIELDS,
  EVENT_COLUMNS,
  EVENT_FIELD_NAMES,
  EVENT_RECORD,
  eventJsonSql,
  OBJECT_FIELDS,
  recordSelect,
  SCALAR_FIELDS,
} from "../../src/events/record.js";
import { parseExport } from "../../src/analytics/export-format.js";
import { resolveField } from "../../src/analytics/fields.js";
import { at, describeDiagnostic, typecheck } from "../helpers/typecheck.js";

// The event record is one table (src/events/record.ts, docs/architecture.md "Add a field to
// events"). Here: what each reader derives from it is the table's fields, and a field added to the
// table alone (no proto field, no value at ingest) does not compile. Stored and read for real, with
// the database's columns checked against the table: test/webhooks/payload.test.ts.

const FILE = "src/events/record.ts";
const AFTER = '  { field: "tags", column: "tags", kind: "object", aliases: [], csvDefault: false },\n';
const ENTRY =
  '  { field: "sessionId", column: "session_id", kind: "optionalText", aliases: ["sessionId"], csvDefault: false },\n';

describe("the event record table", () => {
  it("every reader's list is the table's: SELECT, webhook JSON, aliases, export columns", () => {
    const fields = EVENT_RECORD.map((f) => f.field);
    assert.deepEqual(EVENT_FIELD_NAMES, fields);
    assert.deepEqual(
      EVENT_COLUMNS.map((c) => c.column),
      EVENT_RECORD.map((f) => f.column),
    );
    // The SELECT list reads each column as its field.
    assert.deepEqual(
      recordSelect("e").split(", "),
      EVENT_RECORD.map((f) => `e.${f.column} AS "${f.field}"`),
    );
    // The webhook payload's JSON: every field once, in order, from its column.
    const json = eventJsonSql("e");
    assert.deepEqual(
      [...json.matchAll(/(?:\(|, )'(\w+)', /g)].map((m) => m[1]),
      fields,
    );
    for (const f of EVENT_RECORD) assert.ok(json.includes(`e.${f.column}`), `the payload reads e.${f.column}`);
    // Aliases resolve to their columns; JSON objects are addressed by paths.
    for (const f of EVENT_RECORD) {
      for (const a of f.aliases)
        assert.deepEqual(resolveField(a), { kind: "column", ...COLUMN_ALIASES.get(a)!, name: a });
    }
    for (const o of OBJECT_FIELDS) assert.deepEqual(resolveField(`${o}.a.b`).kind, "json");
    // Export columns: every scalar field is a CSV column of its own; the objects take paths.
    assert.deepEqual([...SCALAR_FIELDS, ...OBJECT_FIELDS].sort(), [...fields].sort());
    assert.deepEqual(
      parseExport("csv", []).columns.map((c) => c.name),
      CSV_DEFAULT_FIELDS,
    );
    for (const f of SCALAR_FIELDS)
      assert.deepEqual(parseExport("csv", [f]).columns[0], { kind: "field", name: f, key: f });
  });

  it("a field added to the table alone does not compile: the Event message and ingest must follow", () => {
    const text = ts.sys.readFile(at(FILE))!;
    assert.ok(text.includes(AFTER), `${FILE} still has the line '${AFTER.trim()}' (update this test)`);
    const diagnostics = typecheck(new Map([[at(FILE), text.replace(AFTER, AFTER + ENTRY)]])).map(describeDiagnostic);
    const must = {
      // The table and the Event message (proto/vigil/v1/events.proto) have the same fields.
      [FILE]: "EVENT_RECORD and the Event message (events.proto) must have the same fields",
      // The ingestor builds every stored event with every field.
      "src/events/ingest.ts": "Property 'sessionId' is missing",
    };
    for (const [file, text] of Object.entries(must)) {
      assert.ok(
        diagnostics.some((d) => d.startsWith(`${file}:`) && d.includes(text)),
        `adding a field to the table is not a compile error in ${file}:\n${diagnostics.join("\n")}`,
      );
    }
    // The handlers that answer Event messages are refused too (bind's reply check); nothing else.
    const allowed = new Set([...Object.keys(must), "src/events/service.ts", "src/analytics/service.ts"]);
    assert.deepEqual(
      diagnostics.filter((d) => !allowed.has(d.slice(0, d.indexOf(":")))),
      [],
      "errors outside the places a new field must reach",
    );
  });
});
