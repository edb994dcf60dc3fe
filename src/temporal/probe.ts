import type { Connection, ConnectionOptions } from "@temporalio/client";
import type { Logger } from "pino";
import type { BackgroundTasks } from "../shared/background.js";
import { startPeriodic } from "../shared/periodic.js";

// Whether this node reaches the Temporal frontend: `temporalServer` on /health, and through it the
// "degraded" status and grpc.health.v1's NOT_SERVING for the services whose work runs on Temporal
// (server/health.ts, server/grpc-health.ts).
//
// Neither the workers nor the client say so by themselves: when the server goes away, the SDK's Core
// retries the workers' polls for ever (Worker.run() never rejects, the worker stays RUNNING) and the
// client retries its calls. So every node with TEMPORAL_ADDRESS (any ROLE) asks the frontend itself:
// one GetSystemInfo (what the SDK calls to connect; no namespace, no permission needed) every
// TEMPORAL_PROBE_MS, never two at once, the first at once. The probe's connection is its own, without
// the SDK's retry interceptor, so a refused connection answers at once; a call that gets no answer
// fails after PROBE_TIMEOUT_MS. After a failure the connection is dropped and made anew on the next
// pass (a kept grpc-js channel would back off its reconnects up to 2 minutes). Changes are logged
// once each: a warning when the server is lost, info when it answers again.

export type TemporalServerState = "unknown" | "reachable" | "unreachable";

/** The longest a probe waits for the frontend's answer (connecting included). */
const PROBE_TIMEOUT_MS = 5_000;

export interface TemporalProbe {
  /** "unknown" until the first probe ends; then how the last one ended. */
  state(): TemporalServerState;
  /** Stops probing (an unanswered probe is abandoned) and closes the probe's connection. */
  close(): Promise<void>;
}

export interface ProbeOptions {
  /** TEMPORAL_ADDRESS, for the logs. */
  address: string;
  /** The connection's options (link.ts); read at each new connection (TLS files included). */
  connection: () => ConnectionOptions;
  everyMs: number;
  log: Logger;
  /** Where the probe records its passes (/health `background`). */
  tasks: BackgroundTasks;
}

export function startTemporalProbe({ address, connection: options, everyMs, log, tasks }: ProbeOptions): TemporalProbe {
  let state: TemporalServerState = "unknown";
  let since = Date.now();
  let connection: Connection | undefined;
  const closing = new AbortController();
  const drop = async () => {
    const c = connection;
    connection = undefined;
    await c?.close().catch(() => undefined);
  };
  const become = (next: TemporalServerState, err?: unknown) => {
    if (next === state) return;
    const ms = Date.now() - since;
    if (next === "unreachable")
      log.warn({ err, address }, "temporal server unreachable: /health is degraded until it answers again");
    else if (state === "unreachable") log.info({ address, unreachableMs: ms }, "temporal server reachable again");
    state = next;
    since = Date.now();
  };
  const pass = async () => {
    try {
      const { Connection } = await import("@temporalio/client");
      connection ??= Connection.lazy({ ...options(), connectTimeout: PROBE_TIMEOUT_MS, interceptors: [] });
      const c = connection;
      const signal = AbortSignal.any([closing.signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
      await c.withAbortSignal(signal, () => c.workflowService.getSystemInfo({}));
      if (!closing.signal.aborted) become("reachable");
    } catch (err) {
      await drop();
      if (!closing.signal.aborted) become("unreachable", err);
    }
  };
  let running: Promise<void> | undefined;
  const once = () => (running ??= pass().finally(() => (running = undefined)));
  void once();
  const periodic = startPeriodic(tasks, "temporal probe", everyMs, once);
  return {
    state: () => state,
    async close() {
      closing.abort();
      await periodic.stop();
      await running;
      await drop();
    },
  };
}
