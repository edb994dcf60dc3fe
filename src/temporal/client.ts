import { Client, Connection } from "@temporalio/client";
import type { Config } from "../config/index.js";

// One Temporal client per process and address, connected on first use (API nodes signal workflows
// without running a worker). Used only when TEMPORAL_ADDRESS is set.

export type TemporalConfig = NonNullable<Config["temporal"]>;

const clients = new Map<string, Promise<{ client: Client; connection: Connection }>>();

export function temporalClient(cfg: TemporalConfig): Promise<Client> {
  const key = `${cfg.address}|${cfg.namespace}`;
  let c = clients.get(key);
  if (!c) {
    c = Connection.connect({ address: cfg.address }).then((connection) => ({ connection, client: new Client({ connection, namespace: cfg.namespace }) }));
    c.catch(() => clients.delete(key)); // retry the connection on the next call
    clients.set(key, c);
  }
  return c.then((x) => x.client);
}

export async function closeTemporalClients(): Promise<void> {
  const all = [...clients.values()];
  clients.clear();
  await Promise.all(all.map((c) => c.then((x) => x.connection.close()).catch(() => undefined)));
}

/** The workflow id of a monitor's deadline workflow: operators find it by the monitor id. */
export const monitorWorkflowId = (monitorId: string) => `monitor-${monitorId}`;
