import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { startNode, type Node } from "../helpers/cluster.js";
import { createTestDatabase } from "../helpers/db.js";
import { project } from "../helpers/fixtures.js";
import { Receiver, waitFor } from "./receiver.js";

// Deliveries pending when the process is killed (kill -9) are sent after the restart: they live in
// PostgreSQL, and the restarted scheduler finds them due.

let rx: Receiver;
const nodes: Node[] = [];
after(async () => {
  for (const n of nodes) await n.kill("SIGKILL");
  await rx?.close();
});

describe("durability", () => {
  it("deliveries pending at a kill -9 are sent after the restart", async () => {
    rx = await Receiver.start();
    let up = false;
    const url = rx.on("/crash", () => (up ? { status: 200 } : { status: 503 }));
    const env = {
      DATABASE_URL: await createTestDatabase(),
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_BACKOFF_BASE_MS: "1500",
      PG_POOL_SIZE: "4",
    };
    const first = await startNode(env);
    nodes.push(first);
    const p = await project(first.rest);
    const w = await first.rest.post(
      `/v1/projects/${p.projectId}/webhooks`,
      { url, events: ["order.paid"] },
      { cookie: p.owner.cookie },
    );
    assert.equal(w.status, 201, w.text);
    const batch = await first.rest.post(
      "/v1/events/batch",
      { events: Array.from({ length: 5 }, (_, i) => ({ type: "order.paid", data: { i } })) },
      { key: p.key },
    );
    assert.equal(batch.status, 202, batch.text);
    // every first attempt fails (503): all five are `retrying`, due again in ~1.5 s
    await waitFor(async () => {
      const r = await first.rest.get(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}/deliveries`, {
        cookie: p.owner.cookie,
      });
      return r.body?.data?.length === 5 && r.body.data.every((d: any) => d.status === "retrying");
    }, "five failed first attempts recorded");
    await first.kill("SIGKILL");
    up = true;

    const second = await startNode(env);
    nodes.push(second);
    const list = await waitFor(
      async () => {
        const r = await second.rest.get(`/v1/projects/${p.projectId}/webhooks/${w.body.data.id}/deliveries`, {
          cookie: p.owner.cookie,
        });
        return r.body?.data?.length === 5 && r.body.data.every((d: any) => d.status === "succeeded")
          ? r.body.data
          : undefined;
      },
      "all five delivered after the restart",
      20_000,
    );
    for (const d of list) {
      assert.equal(d.attempts.at(-1).statusCode, 200);
      assert.equal(d.attempts[0].statusCode, 503);
    }
    const ok = rx
      .at("/crash")
      .filter((_, i) => i >= 5)
      .map((r) => r.headers["x-vigil-delivery-id"]);
    assert.deepEqual([...new Set(ok)].sort(), list.map((d: any) => d.id).sort());
  });
});
