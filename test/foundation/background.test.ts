// The background work in one place (src/shared/background.ts): every loop of src/ is a task of
// BACKGROUND_TASKS, started through startPeriodic or recorded with record(); no other timer loop.
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import pino from "pino";
import { BACKGROUND_TASKS, BackgroundTasks } from "../../src/shared/background.js";
import { Telemetry } from "../../src/shared/telemetry.js";

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(p)));
    else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

describe("background tasks: one list", () => {
  it("setInterval is called only by startPeriodic; every task start names a declared task", async () => {
    const files = await sources("src");
    const declared = new Set(Object.keys(BACKGROUND_TASKS));
    const started = new Set<string>();
    for (const file of files) {
      const text = await readFile(file, "utf8");
      if (file !== path.join("src", "shared", "periodic.ts"))
        assert.ok(!/\bsetInterval\s*\(/.test(text), `${file} runs its own setInterval loop: use startPeriodic`);
      for (const m of text.matchAll(/startPeriodic\(\s*[\w.]+,\s*"([^"]+)"|\.record\(\s*"([^"]+)"/g)) {
        const name = m[1] ?? m[2];
        assert.ok(declared.has(name), `${file} starts "${name}", not in BACKGROUND_TASKS`);
        const owner = BACKGROUND_TASKS[name as keyof typeof BACKGROUND_TASKS].owner;
        assert.equal(file, owner, `"${name}" is started in ${file}, the table says ${owner}`);
        started.add(name);
      }
    }
    // And nothing declared is a phantom: each task is started somewhere.
    assert.deepEqual(
      [...declared].filter((n) => !started.has(n)),
      [],
    );
  });

  it("one loop deletes heartbeats: the retention pass (its statements in src/lifecycle/store.ts)", async () => {
    const deleting: string[] = [];
    for (const file of await sources("src"))
      if (/DELETE FROM heartbeats\b/i.test(await readFile(file, "utf8"))) deleting.push(file);
    assert.deepEqual(deleting, [path.join("src", "lifecycle", "store.ts")]);
  });

  it("a node refuses a task the table does not give its ROLE or runner", () => {
    const log = pino({ level: "silent" });
    const api = new BackgroundTasks(log, new Telemetry(), { role: "api", temporal: false });
    assert.throws(() => api.record("retention pass", 1000), /worker nodes only/);
    assert.doesNotThrow(() => api.record("derived records poll", 1000));
    const embedded = new BackgroundTasks(log, new Telemetry(), { role: "all", temporal: false });
    assert.throws(() => embedded.record("uptime reconciler", 1000), /temporal runner only/);
    assert.doesNotThrow(() => embedded.record("uptime re-scan", 1000));
  });
});
