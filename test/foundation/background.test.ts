// The background work in one place (src/shared/background.ts): every loop of src/ is a task of
// BACKGROUND_TASKS, started through startPeriodic or recorded with record(); no other timer loop.
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, it } from "node:test";
import pino from "pino";
import { probeRpcs } from "../../src/openapi/access.js";
import { BACKGROUND_TASKS, BackgroundTasks } from "../../src/shared/background.js";
import { PgNotifications } from "../../src/shared/notifications.js";
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
      // startPeriodic(tasks, "name", ...), tasks.record("name", ...), new CoalescedPump({ ..., name: "name" }).
      const starts =
        /startPeriodic\(\s*[\w.]+,\s*"([^"]+)"|\.record\(\s*"([^"]+)"|new CoalescedPump\(\{[^]*?\bname:\s*"([^"]+)"/g;
      for (const m of text.matchAll(starts)) {
        const name = m[1] ?? m[2] ?? m[3];
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

describe("the LISTEN connection never holds a stop", () => {
  // A feature's stop() must not wait for its LISTEN subscription: the OpenAPI probe (npm run generate)
  // builds and stops every feature with no database at all, and a node may be stopped during an outage.
  it(
    "the OpenAPI probe builds and stops every feature without a database, and returns",
    { timeout: 120_000 },
    async () => {
      const { bindings, facts } = await probeRpcs();
      assert.ok(bindings.some((b) => b.desc.typeName === "vigil.v1.WebhookService"));
      assert.ok(facts.size > 50, `${facts.size} RPCs probed`);
    },
  );

  it("a subscriber leaves at once while the database is out of reach; stop() ends the retries", async () => {
    // Port 1 on the loopback: nothing listens, every connection attempt is refused.
    const n = new PgNotifications(
      { host: "127.0.0.1", port: 1, connectionTimeoutMillis: 1000 },
      pino({ level: "silent" }),
    );
    const sub = n.subscribe({ channels: ["probe"], onMessage: () => undefined, onReconnect: () => undefined });
    sub.close();
    await sub.listening;
    const late = n.subscribe({ channels: ["probe"], onMessage: () => undefined, onReconnect: () => undefined });
    await n.stop();
    await late.listening;
  });
});
