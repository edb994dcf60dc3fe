import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { z } from "zod";
import { validate } from "../shared/validate.js";
import { fieldProblem } from "./fields.js";
import {
  CSV_DEFAULT_FIELDS,
  isObjectField,
  OBJECT_FIELDS,
  SCALAR_FIELDS,
  type EventJson,
  type ObjectField,
  type ScalarField,
} from "../events/record.js";

// POST .../events/export: the file's format and, for CSV, its columns (validation and the pure
// writing of lines). An event is written from its event-list JSON (the same object NDJSON prints),
// so both formats read exactly what the event list answers.

export type ExportFormat = "ndjson" | "csv";

/** An event-list field (the record's, record.ts), or a path into one of its JSON objects. */
export type Column =
  | { kind: "field"; name: string; key: ScalarField }
  | { kind: "path"; name: string; object: ObjectField; path: string[] };

const isEventField = (v: string): v is ScalarField => (SCALAR_FIELDS as readonly string[]).includes(v);
const MAX_COLUMNS = 100;

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  ndjson: "application/x-ndjson",
  csv: "text/csv; charset=utf-8",
};

function columnProblem(v: string): string | null {
  if (isEventField(v)) return null;
  const problem = fieldProblem(v);
  if (problem) return problem;
  const [head, ...rest] = v.split(".");
  if (isObjectField(head) && rest.length > 0) return null;
  return `must be one of ${SCALAR_FIELDS.join(", ")}, or ${OBJECT_FIELDS.map((f) => `${f}.<path>`).join(", ")}`;
}

const exportSchema = z
  .object({
    format: z.enum(["ndjson", "csv"], { message: "must be ndjson or csv" }).default("ndjson"),
    columns: z
      .array(
        z.string().superRefine((v, ctx) => {
          const p = columnProblem(v);
          if (p) ctx.addIssue({ code: "custom", message: p });
        }),
      )
      .max(MAX_COLUMNS, `at most ${MAX_COLUMNS} columns`)
      .refine((list) => new Set(list).size === list.length, "columns must be unique"),
  })
  .superRefine((v, ctx) => {
    if (v.format === "ndjson" && v.columns.length > 0)
      ctx.addIssue({ code: "custom", path: ["columns"], message: "only for format csv" });
  });

/** The format (`""` is ndjson) and, for CSV, the columns (the default ones when none are given). */
export function parseExport(format: string, columns: string[]): { format: ExportFormat; columns: Column[] } {
  const v = validate(exportSchema, { format: format === "" ? undefined : format, columns });
  const names = v.format === "csv" && v.columns.length === 0 ? CSV_DEFAULT_FIELDS : v.columns;
  return {
    format: v.format,
    columns: names.map((name): Column => {
      if (isEventField(name)) return { kind: "field", name, key: name };
      const [object, ...path] = name.split(".");
      if (!isObjectField(object)) throw new Error(`column ${name} passed the schema`);
      return { kind: "path", name, object, path };
    }),
  };
}

/** RFC 4180: a field with a comma, a double quote, CR or LF is quoted, its quotes doubled. */
function csvField(v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v;
}

/** One CSV record (CRLF-terminated, as RFC 4180 writes records). */
function csvRecord(values: string[]): string {
  return values.map(csvField).join(",") + "\r\n";
}

/** A JSON value as CSV cell text: strings as they are, null/absent empty, anything else as JSON. */
function cellText(v: JsonValue | undefined): string {
  if (v === undefined || v === null) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

function walk(obj: JsonObject, path: string[]): JsonValue | undefined {
  let cur: JsonValue | undefined = obj;
  for (const seg of path) {
    // Own keys only: `__proto__` or `constructor` is a data key, never a member of Object.prototype.
    if (cur === null || typeof cur !== "object" || Array.isArray(cur) || !Object.hasOwn(cur, seg)) return undefined;
    cur = (cur as JsonObject)[seg];
  }
  return cur;
}

export function csvHeader(columns: Column[]): string {
  return csvRecord(columns.map((c) => c.name));
}

export function csvLine(columns: Column[], e: EventJson): string {
  return csvRecord(columns.map((c) => cellText(c.kind === "field" ? e[c.key] : walk(e[c.object], c.path))));
}

export function ndjsonLine(e: EventJson): string {
  return JSON.stringify(e) + "\n";
}
