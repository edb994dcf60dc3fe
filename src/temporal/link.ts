import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Client, Connection } from "@temporalio/client";
import type { Logger } from "pino";
import type { TemporalConfig } from "../config/index.js";
import type { Queryable } from "../storage/db.js";
import type { BackgroundTasks } from "../shared/background.js";
import { startTemporalProbe, type TemporalServerState } from "./probe.js";
import { SEARCH_ATTRIBUTES } from "./search-attributes.js";

// The process's link to Temporal (TEMPORAL_ADDRESS set), created by server/app.ts and closed after
// every feature has stopped, so late wakes (the uptime writer draining at shutdown) still have a
// client. The client connects on first use and reconnects after a failure; API nodes use it to
// signal, worker nodes to signal and to run their workers (worker.ts uses the same options). From
// its creation it probes the frontend every TEMPORAL_PROBE_MS (probe.ts): `server()` on /health.

export interface TaskQueues {
  /** The deadline scan workflow alone: a burst of monitor wakes never queues ahead of it. */
  deadlines: string;
  /** Monitor workflows and their check (local activity). */
  uptime: string;
  /** Webhook delivery workflows and their send activity: slow receivers never delay a deadline. */
  webhooks: string;
}

export interface TemporalLink {
  readonly config: TemporalConfig;
  /** The task queues of this deployment (TEMPORAL_TASK_QUEUE, or derived from the database identity). */
  queues(): Promise<TaskQueues>;
  client(): Promise<Client>;
  /** Whether the search attributes exist on the namespace (workflows set them only then). */
  searchAttributes(): Promise<boolean>;
  /** Whether the frontend answered this node's last probe (probe.ts). */
  server(): TemporalServerState;
  close(): Promise<void>;
}

class TemporalClosedError extends Error {
  constructor() {
    super("the Temporal link is closed (the process is shutting down)");
  }
}

/** Connection options shared by the client and the worker's NativeConnection. */
export function connectionOptions(cfg: TemporalConfig) {
  const file = (f: string | undefined) => (f ? readFileSync(f) : undefined);
  const tls = cfg.tls
    ? {
        serverNameOverride: cfg.tls.serverName,
        serverRootCACertificate: file(cfg.tls.caFile),
        clientCertPair:
          cfg.tls.certFile && cfg.tls.keyFile
            ? { crt: file(cfg.tls.certFile)!, key: file(cfg.tls.keyFile)! }
            : undefined,
      }
    : undefined;
  return { address: cfg.address, tls, apiKey: cfg.apiKey };
}

/** `<base>.deadlines` / `<base>.uptime` / `<base>.webhooks`; base defaults to `vigil-<hash of deployment id and database name>`. */
export async function taskQueues(cfg: TemporalConfig, db: Queryable): Promise<TaskQueues> {
  let base = cfg.taskQueue;
  if (!base) {
    const r = await db.query<{ id: string; db: string }>(
      "SELECT id::text AS id, current_database() AS db FROM deployment",
    );
    const row = r.rows[0];
    base = `vigil-${createHash("sha256").update(`${row?.id}/${row?.db}`).digest("hex").slice(0, 12)}`;
  }
  return { deadlines: `${base}.deadlines`, uptime: `${base}.uptime`, webhooks: `${base}.webhooks` };
}

export function createTemporalLink(
  cfg: TemporalConfig,
  db: Queryable,
  log: Logger,
  tasks: BackgroundTasks,
): TemporalLink {
  let closed = false;
  let current: Promise<{ client: Client; connection: Connection }> | undefined;
  let queues: Promise<TaskQueues> | undefined;
  let attrs: Promise<boolean> | undefined;
  const probe = startTemporalProbe({
    address: cfg.address,
    connection: () => connectionOptions(cfg),
    everyMs: cfg.probeMs,
    log,
    tasks,
  });
  const connect = () => {
    if (closed) return Promise.reject(new TemporalClosedError());
    if (!current) {
      // The SDK is loaded on first use: a process without TEMPORAL_ADDRESS never loads it (docs/architecture.md).
      const c = import("@temporalio/client").then(async ({ Client, Connection }) => {
        const connection = await Connection.connect({ ...connectionOptions(cfg), connectTimeout: "5 seconds" });
        return { connection, client: new Client({ connection, namespace: cfg.namespace }) };
      });
      c.catch(() => {
        if (current === c) current = undefined; // retry the connection on the next call
      });
      current = c;
    }
    return current;
  };
  return {
    config: cfg,
    queues() {
      queues ??= taskQueues(cfg, db).catch((err) => {
        queues = undefined;
        throw err;
      });
      return queues;
    },
    async client() {
      return (await connect()).client;
    },
    searchAttributes() {
      attrs ??= connect()
        .then(({ connection }) => registerSearchAttributes(connection, cfg.namespace, log))
        .catch((err) => {
          attrs = undefined; // Temporal unreachable: ask again next time
          throw err;
        });
      return attrs;
    },
    server: () => probe.state(),
    async close() {
      closed = true;
      const c = current;
      current = undefined;
      await probe.close();
      await c?.then((x) => x.connection.close()).catch(() => undefined);
    },
  };
}

/**
 * Adds Vigil's search attributes to the namespace where missing. false (logged) when they are
 * missing and cannot be added (no operator permission, e.g. Temporal Cloud: create them there with
 * `tcld`), in which case workflows run without them.
 */
async function registerSearchAttributes(connection: Connection, namespace: string, log: Logger): Promise<boolean> {
  const { default: proto } = await import("@temporalio/proto");
  const KEYWORD = proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  try {
    const have = await connection.operatorService.listSearchAttributes({ namespace });
    const known = { ...(have.customAttributes ?? {}), ...(have.systemAttributes ?? {}) };
    const missing = SEARCH_ATTRIBUTES.filter((k) => !(k.name in known));
    if (!missing.length) return true;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, KEYWORD])),
    });
    log.info({ added: missing.map((k) => k.name), namespace }, "temporal: search attributes registered");
    return true;
  } catch (err) {
    // ALREADY_EXISTS: another node registered them at the same moment.
    if ((err as { code?: number }).code === 6) return true;
    log.warn(
      { err, namespace },
      "temporal: cannot register Vigil's search attributes; workflows run without them (docs/temporal.md)",
    );
    return false;
  }
}
