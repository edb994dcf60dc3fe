import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { before, describe, it } from "node:test";
import { probeRpcs } from "../../src/openapi/access.js";
import { protoRuleFiles, ruleNotes, ruleOptions } from "../../src/openapi/proto-rules.js";
import { ruleSchema } from "../../src/openapi/rules.js";
import type { ServiceBinding } from "../../src/shared/feature.js";
import { doc, operations, type Json } from "./openapi-check.js";

// The rules handlers enforce with zod (bind's `rules`) are stated by gen/openapi.json, keyword for
// keyword: each rule's JSON Schema (z.toJSONSchema) is compared with the document's request schema
// of the operation that runs it. A rule changed without `npm run generate`, or a generator that
// drops a keyword, fails here. Also the document-wide rules of issue #30 (body required, free-form
// objects, info).

const KEYWORDS = [
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
] as const;

let bindings: ServiceBinding[];
before(async () => {
  ({ bindings } = await probeRpcs());
});

const byGrpc = new Map(operations.map((o) => [o.op["x-grpc-method"] as string, o]));

const resolve = (s: Json): Json => (s?.$ref ? doc.components.schemas[(s.$ref as string).split("/").pop()!] : s);

/** The document's schema of one request field (body property or query parameter) and whether it is required. */
function documented(op: Json, name: string): { schema: Json; required: boolean } | undefined {
  const body = resolve(op.requestBody?.content?.["application/json"]?.schema);
  if (body?.properties?.[name])
    return { schema: body.properties[name], required: (body.required ?? []).includes(name) };
  const param = (op.parameters ?? []).find((p: Json) => p.name === name && p.in === "query");
  return param ? { schema: param.schema, required: param.required === true } : undefined;
}

/** The schema a value must meet: a nullable message's `anyOf` branch that is not null. */
const nonNull = (s: Json): Json => (s.anyOf ? s.anyOf.find((x: Json) => x.type !== "null") : s);

function checkRule(where: string, docSchema: Json, given: Json): void {
  const s = nonNull(docSchema);
  const rule = given.anyOf ? given.anyOf.find((x: Json) => x.type !== "null") : given;
  for (const k of KEYWORDS)
    if (rule[k] !== undefined) assert.deepEqual(s[k], rule[k], `${where}: ${k} of the rule is not in the document`);
  if (rule.enum)
    assert.deepEqual(
      (s.enum as unknown[]).filter((v) => v !== null),
      rule.enum,
      `${where}: enum of the rule is not in the document`,
    );
  if (rule.type === "integer") assert.ok([s.type].flat().includes("integer"), `${where}: must be an integer`);
  if (rule.items && typeof rule.items === "object") checkRule(`${where}[]`, s.items, rule.items);
  if (rule.properties) checkObject(where, s, rule);
}

function checkObject(where: string, s: Json, rule: Json): void {
  for (const [name, r] of Object.entries(rule.properties as Record<string, Json>)) {
    if (!s.properties?.[name]) continue;
    checkRule(`${where}.${name}`, s.properties[name], r);
  }
  for (const name of rule.required ?? [])
    if (s.properties?.[name]) assert.ok((s.required ?? []).includes(name), `${where}.${name}: required`);
}

describe("the OpenAPI document states the handlers' zod rules", () => {
  it("for every rule of every binding, keyword for keyword", () => {
    let checked = 0;
    for (const b of bindings) {
      for (const [method, zodRule] of Object.entries(b.rules ?? {})) {
        const m = b.desc.methods.find((x) => x.localName === method)!;
        const o = byGrpc.get(`/${b.desc.typeName}/${m.name}`);
        if (!o) continue; // no REST route
        const rule = ruleSchema(zodRule);
        for (const [name, r] of Object.entries((rule.properties ?? {}) as Record<string, Json>)) {
          const d = documented(o.op, name);
          if (!d) continue; // a path parameter
          checkRule(`${o.id} ${name}`, d.schema, r);
          if (((rule.required ?? []) as string[]).includes(name))
            assert.ok(d.required, `${o.id} ${name}: required by the rule, optional in the document`);
          checked++;
        }
      }
    }
    assert.ok(checked > 50, `only ${checked} fields have rules`);
  });

  it("names the rules issue #30 lists", () => {
    const body = (id: string) =>
      resolve(operations.find((o) => o.id === id)!.op.requestBody.content["application/json"].schema);
    const signup = body("Signup");
    assert.deepEqual(signup.required, ["email", "password"]);
    assert.equal(signup.properties.email.format, "email");
    assert.equal(signup.properties.password.minLength, 8);
    assert.deepEqual(body("CreateProject").properties.platform.enum, ["node", "browser", "react", "next", "other"]);
    const monitor = body("CreateMonitor");
    assert.deepEqual(monitor.required, ["name"]);
    assert.equal(monitor.properties.expectedIntervalMs.minimum, 100);
    const metric = body("QueryMetric");
    assert.deepEqual(metric.required, ["name", "time"]);
    assert.equal(nonNull(metric.properties.time).properties.start.format, "date-time");
    const series = body("Timeseries");
    assert.deepEqual(series.required, ["time", "interval"]);
    assert.deepEqual(series.properties.interval.enum, ["minute", "hour", "day", "week", "month"]);
    assert.deepEqual(nonNull(series.properties.time).required, ["start", "end"]);
    const event = body("IngestEvent");
    assert.deepEqual(event.required, ["type"]);
    assert.equal(event.properties.id.format, "uuid");
    assert.deepEqual(body("IngestEventBatch").properties.events.maxItems, 1000);
    const limit = operations.find((o) => o.id === "ListEvents")!.op.parameters.find((p: Json) => p.name === "limit");
    assert.deepEqual([limit.schema.minimum, limit.schema.maximum], [1, 100]);
  });

  it("requires the body of every body route, types free-form objects as such, and has a license and contact", () => {
    for (const o of operations)
      if (o.op.requestBody) assert.equal(o.op.requestBody.required, true, `${o.id}: requestBody.required`);
    const text = JSON.stringify(doc);
    assert.ok(
      !text.includes('"type":"object","description":"Any JSON object."'),
      "a Struct without additionalProperties",
    );
    assert.ok(doc.info.license?.name, "info.license");
    assert.ok(doc.info.contact?.name, "info.contact");
  });

  it("states every rule in the proto comments too, generated from the same zod rules", () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
    const buf = path.join(root, "node_modules", ".bin", "buf");
    const notes = ruleNotes(bindings);
    const options = ruleOptions(bindings);
    // A sample of what the comments say, from the rules above.
    assert.deepEqual(notes.get("vigil.v1.SignupRequest.password")?.[0], "required; 8 to 1024 characters.");
    assert.deepEqual(notes.get("vigil.v1.CreateMonitorRequest.name")?.[0], "required; 1 to 200 characters.");
    const stale = [...protoRuleFiles(root, buf, notes, options).keys()];
    assert.deepEqual(stale, [], `proto rules out of date with the zod rules (npm run generate): ${stale.join(", ")}`);
    // And the check sees a rule whose comment is missing.
    const fewer = new Map(notes);
    fewer.delete("vigil.v1.SignupRequest.password");
    assert.deepEqual([...protoRuleFiles(root, buf, fewer, options).keys()], ["proto/vigil/v1/auth.proto"]);
    // And one whose protovalidate options are missing (test/clients/proto-validate.test.ts checks what they say).
    const fewerOptions = new Map(options);
    fewerOptions.delete("vigil.v1.SignupRequest.password");
    assert.deepEqual([...protoRuleFiles(root, buf, notes, fewerOptions).keys()], ["proto/vigil/v1/auth.proto"]);
  });
});
