import { createContextKey } from "@connectrpc/connect";

/** Facts about the caller's connection that are not headers. */
export interface ClientInfo {
  ip: string;
  requestId: string;
  /** Set once the caller is authorized for a project (for logs). */
  projectId?: string;
  /** Route template or RPC name (for logs and metrics, bounded cardinality). */
  route?: string;
}

export const clientInfoKey = createContextKey<ClientInfo>({ ip: "", requestId: "" });
