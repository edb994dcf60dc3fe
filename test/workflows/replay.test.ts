import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from "@temporalio/worker";
import { WORKFLOWS_PATH } from "../../src/temporal/worker.js";

// Versioning (issue #14 point 11): every saved history in test/temporal/histories/ (recorded from
// earlier versions of workflows/ by test/temporal/record-histories.ts, including running workflows' partial
// histories, which are what a new worker replays) must replay against today's workflows without a
// determinism error. A change to workflows/ that would break running workflows fails here: guard
// it with patched(). No Temporal server is needed.

// The histories and the diverged fixture stay beside the live suites that record-histories.ts runs.
const temporalDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "../temporal");
const dir = path.join(temporalDir, "histories");
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort();

Runtime.install({
  logger: new DefaultLogger("ERROR"),
  telemetryOptions: { logging: { filter: { core: "ERROR", other: "ERROR" } } },
});

// The JSON of `temporal workflow show --output json`, decoded with the protobufjs that
// @temporalio/proto's types were built with. (The SDK's own historyFromJSON, which
// runReplayHistories applies to JSON, fails with "type must be a Type" in this install: npm gives
// @temporalio/common and @temporalio/proto separate nested copies of protobufjs 8, as the top-level
// protobufjs is grpc's 7.)
const protoRequire = createRequire(createRequire(import.meta.url).resolve("@temporalio/proto"));
const { fromJson } = protoRequire("protobufjs/ext/protojson") as {
  fromJson(type: unknown, json: unknown, opts: object): unknown;
};
const { patchProtobufRoot } = protoRequire("@temporalio/proto/lib/patch-protobuf-root") as {
  patchProtobufRoot(root: unknown): { lookupType(name: string): unknown };
};
const historyType = patchProtobufRoot(protoRequire("@temporalio/proto")).lookupType("temporal.api.history.v1.History");
function historyFromJson(json: unknown): unknown {
  const h = fromJson(historyType, json, { ignoreUnknownFields: true });
  if (!h) throw new TypeError("not a history");
  return h;
}

async function replayAll(workflowsPath: string): Promise<Map<string, string | undefined>> {
  const histories = files.map((f) => ({
    workflowId: f,
    history: historyFromJson(JSON.parse(readFileSync(path.join(dir, f), "utf8"))),
  }));
  const opts: ReplayWorkerOptions = { workflowsPath };
  const results = new Map<string, string | undefined>();
  for await (const r of Worker.runReplayHistories(opts, histories))
    results.set(r.workflowId, r.error ? `${r.error.name}: ${r.error.message}` : undefined);
  return results;
}

describe("replay of saved workflow histories", () => {
  it("there are saved histories of every workflow type", () => {
    assert.ok(
      files.some((f) => /monitor/.test(f)),
      "a monitor workflow history",
    );
    assert.ok(
      files.some((f) => /webhook/.test(f)),
      "a webhook delivery workflow history",
    );
    assert.ok(
      files.some((f) => /deadline-scan/.test(f)),
      "a deadline scan workflow history",
    );
  });

  it("every saved history replays against workflows/ without a determinism error", async () => {
    const results = await replayAll(WORKFLOWS_PATH);
    assert.deepEqual([...results.keys()].sort(), files, "every history was replayed");
    const failed = [...results].filter(([, e]) => e !== undefined);
    assert.deepEqual(
      failed,
      [],
      `histories that no longer replay:\n${failed.map(([f, e]) => `  ${f}: ${e}`).join("\n")}`,
    );
  });

  it("replay does detect a change: the same histories fail against diverged workflow code", async () => {
    const results = await replayAll(path.join(temporalDir, "fixtures/diverged-workflows.ts"));
    for (const f of files)
      assert.match(
        String(results.get(f)),
        /Nondeterminism|Determinism/i,
        `${f} should not replay against diverged code`,
      );
  });
});
