import assert from "node:assert/strict";
import pg from "pg";
import { Client, Connection } from "@temporalio/client";
import { startTestApp, type TestApp } from "../helpers/app.js";
import { project, type ProjectFixture } from "../helpers/fixtures.js";
import { startTemporal, type TemporalServer } from "../helpers/temporal.js";
import { Receiver, waitFor, type Responder } from "../webhooks/receiver.js";

// Shared setup of the live webhook suites (test/temporal/webhooks-*.test.ts): a real Temporal dev
// server (the run's shared one when npm test set it, else our own), a Vigil in Temporal mode on a
// fresh database (its own task queues), a real local receiver, and the Temporal client operators use.

export interface Live {
  t: TestApp;
  p: ProjectFixture;
  rx: Receiver;
  temporal: Client;
  address: string;
  sql: pg.Pool;
  close(): Promise<void>;
}

export async function startLive(env: Record<string, string>): Promise<Live> {
  let own: TemporalServer | undefined;
  let address = process.env.VIGIL_TEST_TEMPORAL_ADDRESS;
  if (!address) {
    own = await startTemporal();
    address = own.address;
  }
  const t = await startTestApp({
    TEMPORAL_ADDRESS: address,
    WEBHOOK_ALLOW_PRIVATE: "true",
    LOG_LEVEL: process.env.VIGIL_TEST_LOG ?? "silent",
    ...env,
  });
  await waitFor(
    async () => (await t.rest.get("/health")).body?.temporalWorker === "running",
    "the Temporal worker running",
    30_000,
  );
  const p = await project(t.rest);
  const rx = await Receiver.start();
  const connection = await Connection.connect({ address });
  const temporal = new Client({ connection });
  const sql = new pg.Pool({ connectionString: t.databaseUrl, max: 2 });
  sql.on("error", () => {});
  return {
    t,
    p,
    rx,
    temporal,
    address,
    sql,
    async close() {
      await t.close();
      await rx.close();
      await sql.end().catch(() => {});
      await connection.close();
      await own?.stop();
    },
  };
}

export const owner = (l: Live) => ({ cookie: l.p.owner.cookie });

export async function hook(l: Live, path: string, reply: Responder, events = [path.slice(1)]): Promise<{ id: string }> {
  const url = l.rx.on(path, reply);
  const r = await l.t.rest.post(`/v1/projects/${l.p.projectId}/webhooks`, { name: path, url, events }, owner(l));
  assert.equal(r.status, 201, r.text);
  return r.body.data;
}

/** Ingests one event of `type`; its delivery reaches the receiver with `data` under body.data.data. */
export async function track(l: Live, type: string, data: Record<string, unknown> = {}): Promise<string> {
  const r = await l.t.rest.post("/v1/events", { type, userId: "u1", data }, { key: l.p.key });
  assert.equal(r.status, 202, r.text);
  return r.body.data.id;
}

export interface ApiDelivery {
  id: string;
  eventId: string;
  status: string;
  attempts: { at: string; statusCode: number | null }[];
  nextAttemptAt: string | null;
}

export async function deliveries(l: Live, webhookId: string): Promise<ApiDelivery[]> {
  const r = await l.t.rest.get(`/v1/projects/${l.p.projectId}/webhooks/${webhookId}/deliveries?limit=100`, owner(l));
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

export async function delivery(l: Live, webhookId: string, id: string): Promise<ApiDelivery> {
  const d = (await deliveries(l, webhookId)).find((x) => x.id === id);
  assert.ok(d, `delivery ${id} listed`);
  return d;
}

/** The delivery id of the event `eventId` (once the outbox expanded it). */
export async function deliveryOf(l: Live, webhookId: string, eventId: string): Promise<string> {
  try {
    return await waitFor(
      async () => (await deliveries(l, webhookId)).find((d) => d.eventId === eventId)?.id,
      `the delivery of ${eventId}`,
    );
  } catch (err) {
    // Where the event stopped (CI has seen a first delivery not appear within the wait, cause not found).
    const state = await l.sql
      .query(
        `SELECT (SELECT count(*) FROM events WHERE id = $1)::int AS events,
                (SELECT count(*) FROM webhook_outbox WHERE webhook_id = $2)::int AS outbox,
                (SELECT count(*) FROM webhook_deliveries WHERE webhook_id = $2)::int AS deliveries,
                (SELECT enabled FROM webhooks WHERE id = $2) AS enabled`,
        [eventId, webhookId],
      )
      .then((r) => JSON.stringify(r.rows[0]))
      .catch((e: Error) => `state not read: ${e.message}`);
    throw new Error(`${(err as Error).message}; ${state}`);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `p`, or a failure naming `what` after `ms` (a workflow result must not hang a test). */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)),
  );
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The event data a delivery carries (the receiver's view of body.data.data). */
export const dataOf = (raw: string): Record<string, any> => JSON.parse(raw).data?.data ?? {};
export const deliveryIdOf = (h: { headers: Record<string, unknown> }) => String(h.headers["x-vigil-delivery-id"]);
