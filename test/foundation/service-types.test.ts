import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, it } from "node:test";
import type { DescService } from "@bufbuild/protobuf";
import ts from "typescript";

// Every service is bound with `bind()` (src/shared/feature.ts), which types its handlers against the
// generated descriptor: a misspelled request field, a response field the output message does not
// have, a missing method, a misspelled method and a wrong `restJsonList` entry do not compile. This
// compiles deliberately wrong snippets, for every vigil.v1 service, and a correct one per service
// (so the test fails in both directions), all in one TypeScript program against the project's
// tsconfig, and checks each wrong snippet fails with exactly the expected diagnostic.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const GEN = path.join(ROOT, "gen/vigil/v1");
const FEATURE = path.join(ROOT, "src/shared/feature.js");

interface Service {
  name: string;
  module: string;
  desc: DescService;
}

/** Every service of gen/vigil/v1, by its exported name. */
async function allServices(): Promise<Service[]> {
  const out: Service[] = [];
  for (const f of readdirSync(GEN)
    .filter((n) => n.endsWith("_pb.ts"))
    .sort()) {
    const module = path.join(GEN, f.replace(/\.ts$/, ".js"));
    const mod = (await import(path.join(GEN, f))) as Record<string, { kind?: string }>;
    for (const [name, v] of Object.entries(mod))
      if (v?.kind === "service") out.push({ name, module, desc: v as DescService });
  }
  return out;
}

interface Snippet {
  /** What the snippet gets wrong ("" for the correct one). */
  mistake: string;
  code: string;
  /** For a wrong snippet: text the one diagnostic must contain, and the source text it must point at. */
  expect?: { message: RegExp; at?: string };
}

const header = (s: Service) =>
  `import { ${s.name} } from ${JSON.stringify(s.module)};\nimport { bind } from ${JSON.stringify(FEATURE)};\n`;

/**
 * A handler per method that compiles: reads every request field, returns an empty response (a
 * server-streaming method: an async generator that yields one).
 */
function handler(s: Service, method: string, body?: string): string {
  const m = s.desc.methods.find((x) => x.localName === method)!;
  const reads = m.input.fields.map((f) => `void req.${f.localName};`).join(" ");
  if (m.methodKind === "server_streaming")
    return `  async *${method}(req, ctx) { void ctx; ${reads} ${body ?? "yield {};"} },\n`;
  return `  async ${method}(req, ctx) { void ctx; ${reads} ${body ?? "return {};"} },\n`;
}

function impl(s: Service, replace: Record<string, string | null> = {}, extra = ""): string {
  let out = "{\n";
  for (const m of s.desc.methods) {
    const r = replace[m.localName];
    if (r === null) continue;
    out += r ?? handler(s, m.localName);
  }
  return `${out}${extra}}`;
}

function snippetsFor(s: Service): Snippet[] {
  const methods = s.desc.methods;
  const withInput = methods.find((m) => m.input.fields.length > 0);
  const withOutput = methods.find((m) => m.output.fields.length > 0);
  const first = methods[0].localName;
  const last = methods[methods.length - 1].localName;
  const out: Snippet[] = [{ mistake: "", code: `export const b = bind(${s.name}, ${impl(s)});\n` }];
  if (withInput) {
    const field = `${withInput.input.fields[0].localName}Typo`;
    out.push({
      mistake: `misspelled request field ${withInput.localName}: req.${field}`,
      code: `export const b = bind(${s.name}, ${impl(s, { [withInput.localName]: `  async ${withInput.localName}(req) { void req.${field}; return {}; },\n` })});\n`,
      expect: {
        message: new RegExp(`Property '${field}' does not exist on type '${withInput.input.name}'`),
        at: field,
      },
    });
  }
  if (withOutput) {
    const f = withOutput.output.fields[0].localName;
    out.push({
      mistake: `response field the message does not have: ${withOutput.localName} returns { ${f}, ${f}Typo }`,
      code: `export const b = bind(${s.name}, ${impl(s, { [withOutput.localName]: `  async ${withOutput.localName}() { return { ${f}: undefined, ${f}Typo: 1 }; },\n` })});\n`,
      expect: { message: new RegExp(`${f}Typo: never`), at: withOutput.localName },
    });
    out.push({
      mistake: `response of the wrong message: ${withOutput.localName} returns { ${f}Typo } alone`,
      code: `export const b = bind(${s.name}, ${impl(s, { [withOutput.localName]: `  async ${withOutput.localName}() { return { ${f}Typo: 1 }; },\n` })});\n`,
      expect: {
        message: new RegExp(
          `Type '\\{ ${f}Typo: number; \\}' is not assignable to type 'MessageInit<${withOutput.output.name}>'`,
        ),
        at: withOutput.localName,
      },
    });
  }
  out.push({
    mistake: `missing method ${last}`,
    code: `export const b = bind(${s.name}, ${impl(s, { [last]: null })});\n`,
    expect: { message: new RegExp(`Property '${last}' is missing in type`) },
  });
  out.push({
    mistake: `misspelled method ${first}Typo`,
    code: `export const b = bind(${s.name}, ${impl(s, {}, `  async ${first}Typo() { return {}; },\n`)});\n`,
    expect: { message: /is not assignable to type 'never'/, at: `${first}Typo` },
  });
  return out;
}

const STREAM_AS_UNARY = /Property '\[Symbol.asyncIterator\]' is missing in type 'Promise<\{\}>'/;
const UNARY_AS_STREAM =
  /Type 'AsyncGenerator<\{\}, void, unknown>' is not assignable to type 'MessageInit<CountResponse> | Promise<MessageInit<CountResponse>>'/;

/** Mistakes that only some services can make, written out. */
function handWritten(services: Service[]): { service: Service; snippet: Snippet }[] {
  const events = services.find((s) => s.name === "EventService")!;
  const projects = services.find((s) => s.name === "ProjectService")!;
  const analytics = services.find((s) => s.name === "AnalyticsService")!;
  const stream = (code: string) => impl(analytics, { exportEvents: `  ${code},\n` });
  const ok = `{ restJsonList: { ingestEventBatch: "events" } }`;
  return [
    {
      service: events,
      snippet: { mistake: "", code: `export const b = bind(EventService, ${impl(events)}, ${ok});\n` },
    },
    {
      service: events,
      snippet: {
        mistake: "misspelled field in a nested response message: getEvent returns { data: { id, typeTypo } }",
        code: `export const b = bind(EventService, ${impl(events, { getEvent: `  async getEvent(req) { return { data: { id: req.eventId, typeTypo: "x" } }; },\n` })});\n`,
        expect: { message: /typeTypo: never/, at: "getEvent" },
      },
    },
    {
      service: events,
      snippet: {
        mistake: "restJsonList naming a field the method does not have",
        code: `export const b = bind(EventService, ${impl(events)}, { restJsonList: { ingestEventBatch: "event" } });\n`,
        expect: { message: /Type '"event"' is not assignable to type '"events"'/, at: "ingestEventBatch" },
      },
    },
    {
      service: events,
      snippet: {
        mistake: "restJsonList naming a field that is not a repeated google.protobuf.Value",
        code: `export const b = bind(EventService, ${impl(events)}, { restJsonList: { ingestEvent: "data" } });\n`,
        expect: { message: /Type 'string' is not assignable to type 'undefined'/, at: "ingestEvent" },
      },
    },
    {
      service: events,
      snippet: {
        mistake: "restJsonList naming a method the service does not have",
        code: `export const b = bind(EventService, ${impl(events)}, { restJsonList: { ingestEvents: "events" } });\n`,
        expect: { message: /'ingestEvents' does not exist in type/, at: "ingestEvents" },
      },
    },
    // Server streams (AnalyticsService.ExportEvents): yielded messages are checked like replies.
    {
      service: analytics,
      snippet: {
        mistake: "",
        code: `export const b = bind(AnalyticsService, ${stream('async *exportEvents(req) { yield { contentType: "text/csv", data: new Uint8Array() }; yield { data: new TextEncoder().encode(req.format) }; }')}, { streamContentTypes: { exportEvents: ["text/csv"] } });\n`,
      },
    },
    {
      service: analytics,
      snippet: {
        mistake: "a server stream yielding a field the message does not have",
        code: `export const b = bind(AnalyticsService, ${stream('async *exportEvents() { yield { contentType: "x", dataTypo: 1 }; }')});\n`,
        expect: { message: /dataTypo: never/, at: "exportEvents" },
      },
    },
    {
      service: analytics,
      snippet: {
        mistake: "a server stream reading a misspelled request field",
        code: `export const b = bind(AnalyticsService, ${stream("async *exportEvents(req) { void req.formatTypo; yield {}; }")});\n`,
        expect: { message: /Property 'formatTypo' does not exist on type 'ExportEventsRequest'/, at: "formatTypo" },
      },
    },
    {
      service: analytics,
      snippet: {
        mistake: "a server-streaming method written as a unary handler",
        code: `export const b = bind(AnalyticsService, ${stream("async exportEvents() { return {}; }")});\n`,
        expect: { message: STREAM_AS_UNARY, at: "exportEvents" },
      },
    },
    {
      service: analytics,
      snippet: {
        mistake: "a unary method written as a server stream",
        code: `export const b = bind(AnalyticsService, ${impl(analytics, { count: "  async *count() { yield {}; },\n" })});\n`,
        expect: { message: UNARY_AS_STREAM, at: "count" },
      },
    },
    {
      service: analytics,
      snippet: {
        mistake: "streamContentTypes naming a unary method",
        code: `export const b = bind(AnalyticsService, ${impl(analytics)}, { streamContentTypes: { count: ["text/csv"] } });\n`,
        expect: { message: /'count' does not exist in type/, at: "count" },
      },
    },
    {
      // grpc.reflection.v1's ServerReflectionInfo is bidirectional: neither adapter serves that.
      service: {
        name: "ServerReflection",
        module: path.join(ROOT, "gen/grpc/reflection/v1/reflection_pb.js"),
        desc: events.desc,
      },
      snippet: {
        mistake: "a service with a bidirectional streaming method",
        code: `export const b = bind(ServerReflection, { async *serverReflectionInfo() {} });\n`,
        expect: { message: /is not assignable to parameter of type 'BindableService'/, at: "ServerReflection" },
      },
    },
    {
      service: projects,
      snippet: {
        mistake: "a binding built by hand instead of by bind()",
        code: `import type { ServiceBinding } from ${JSON.stringify(FEATURE)};\nexport const b: ServiceBinding = { desc: ProjectService, impl: {} };\n`,
        expect: { message: /Property '\[bound\]' is missing/, at: "b" },
      },
    },
  ];
}

describe("service types: bind() makes every handler mistake a compile error", () => {
  let dir: string;
  const cases: { file: string; service: string; snippet: Snippet }[] = [];
  let diagnostics: Map<string, ts.Diagnostic[]>;

  before(async () => {
    const services = await allServices();
    assert.ok(services.length >= 9, `services found: ${services.map((s) => s.name).join(", ")}`);
    dir = mkdtempSync(path.join(os.tmpdir(), "vigil-service-types-"));
    const all = [
      ...services.flatMap((s) => snippetsFor(s).map((snippet) => ({ service: s, snippet }))),
      ...handWritten(services),
    ];
    all.forEach(({ service, snippet }, i) => {
      // .mts: an ES module wherever the temp dir is (the project is "type": "module").
      const file = path.join(dir, `snippet-${i}.mts`);
      writeFileSync(file, `${header(service)}${snippet.code}`);
      cases.push({ file, service: service.name, snippet });
    });
    const config = ts.getParsedCommandLineOfConfigFile(
      path.join(ROOT, "tsconfig.json"),
      {},
      {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, "\n")),
      },
    )!;
    // One program for every snippet: the project's compiler options, only the snippets as roots;
    // not its unused-code checks (a snippet imports bind() whether it calls it or not, and a handler
    // of an empty request ignores it): these snippets are about bind()'s types.
    const program = ts.createProgram(
      cases.map((c) => c.file),
      { ...config.options, noEmit: true, noUnusedLocals: false, noUnusedParameters: false },
    );
    diagnostics = new Map(
      cases.map((c) => [c.file, [...ts.getPreEmitDiagnostics(program, program.getSourceFile(c.file))]]),
    );
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  const describeDiagnostic = (d: ts.Diagnostic) => {
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n");
    const at = d.file && d.start !== undefined ? d.file.text.slice(d.start, d.start + (d.length ?? 0)) : "";
    return { text, at };
  };

  it("a correct implementation of every service compiles (the snippets are sound)", () => {
    const correct = cases.filter((c) => !c.snippet.expect);
    assert.ok(correct.length >= 10);
    for (const c of correct) {
      const ds = diagnostics.get(c.file)!.map(describeDiagnostic);
      assert.deepEqual(
        ds,
        [],
        `${c.service}: the correct snippet does not compile:\n${ds.map((d) => d.text).join("\n")}`,
      );
    }
  });

  it("every wrong snippet fails with the expected diagnostic, and only that one", () => {
    const wrong = cases.filter((c) => c.snippet.expect);
    // Per service: request field, two response mistakes, missing and misspelled methods.
    assert.ok(wrong.length >= 45, `${wrong.length} wrong snippets`);
    for (const c of wrong) {
      const ds = diagnostics.get(c.file)!.map(describeDiagnostic);
      const what = `${c.service}: ${c.snippet.mistake}`;
      assert.equal(
        ds.length,
        1,
        `${what}: expected one diagnostic, got ${ds.length}:\n${ds.map((d) => d.text).join("\n---\n")}`,
      );
      assert.match(ds[0].text, c.snippet.expect!.message, `${what}: ${ds[0].text}`);
      if (c.snippet.expect!.at !== undefined)
        assert.equal(ds[0].at, c.snippet.expect!.at, `${what}: points at '${ds[0].at}'`);
    }
  });
});
