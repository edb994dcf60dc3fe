import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { OPENAPI_PATH } from "../../src/server/docs.js";
import type { Res } from "../helpers/rest.js";

// The OpenAPI document (gen/openapi.json) as a test oracle: operations by id, real responses
// validated against the schema of the status they came with, and a record of which operations saw
// a validated success and a validated error.

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export const doc: Json = JSON.parse(readFileSync(OPENAPI_PATH, "utf8"));

export interface Operation {
  id: string;
  verb: string;
  path: string;
  op: Json;
}

export const operations: Operation[] = Object.entries(doc.paths as Record<string, Record<string, Json>>).flatMap(
  ([path, item]) =>
    Object.entries(item).map(([verb, op]) => ({ id: op.operationId as string, verb: verb.toUpperCase(), path, op })),
);
export const byId = new Map(operations.map((o) => [o.id, o]));

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
addFormats(ajv);
ajv.addFormat("int32", {
  type: "number",
  validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
});
ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isSafeInteger(n) });
ajv.addFormat("double", { type: "number", validate: (n: number) => Number.isFinite(n) });
ajv.addFormat("float", { type: "number", validate: (n: number) => Number.isFinite(n) });
ajv.addSchema(doc, "openapi.json");

const pointer = (...parts: string[]) => "#/" + parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
const validators = new Map<string, ReturnType<typeof ajv.compile>>();
function validatorAt(ref: string) {
  let v = validators.get(ref);
  if (!v) validators.set(ref, (v = ajv.compile({ $ref: `openapi.json${ref}` })));
  return v;
}

export const coverage = new Map<string, { success: number; error: number; statuses: Set<number> }>();

/** Checks a real response against the operation's documented response for its status. */
export function checkResponse(o: Operation, res: Res): void {
  const status = String(res.status);
  let entry = o.op.responses[status];
  let at = pointer("paths", o.path, o.verb.toLowerCase(), "responses", status);
  const explicit = entry !== undefined;
  if (!entry) {
    entry = o.op.responses.default;
    at = pointer("paths", o.path, o.verb.toLowerCase(), "responses", "default");
  }
  assert.ok(entry, `${o.id}: status ${status} is not documented (${res.text.slice(0, 200)})`);
  if (entry.$ref) at = entry.$ref as string;
  const resolved = entry.$ref ? doc.components.responses[(entry.$ref as string).split("/").pop()!] : entry;
  if (res.status < 400) assert.ok(explicit, `${o.id}: success status ${status} must be listed explicitly`);
  if (!resolved.content) {
    assert.equal(res.text, "", `${o.id}: ${status} is documented without a body`);
  } else if (!resolved.content["application/json"]) {
    // A streamed file (HttpBody): its media type must be one the operation documents.
    const media = (res.headers.get("content-type") ?? "").split(";", 1)[0].trim();
    assert.ok(media in resolved.content, `${o.id}: ${status} content-type ${media} is not documented`);
  } else {
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/, `${o.id}: ${status} content-type`);
    const validate = validatorAt(`${at}/content/application~1json/schema`);
    assert.ok(
      validate(res.body),
      `${o.id}: ${status} body does not match the document: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 500)}`,
    );
  }
  for (const name of Object.keys(resolved.headers ?? {}))
    assert.ok(res.headers.get(name), `${o.id}: ${status} lacks the documented header ${name}`);
  const c = coverage.get(o.id) ?? { success: 0, error: 0, statuses: new Set<number>() };
  if (res.status < 400) c.success++;
  else c.error++;
  c.statuses.add(res.status);
  coverage.set(o.id, c);
}

/** `{name}` path variables filled in, each URI-encoded. */
export function fillPath(path: string, params: Record<string, string>): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const v = params[name];
    assert.ok(v !== undefined, `no value for path parameter {${name}} of ${path}`);
    return encodeURIComponent(v);
  });
}

export const hasScheme = (o: Operation, scheme: string) =>
  (o.op.security as Record<string, unknown>[]).some((s) => scheme in s);
