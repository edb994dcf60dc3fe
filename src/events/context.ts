import { assignJson } from "../shared/objects.js";
import type { ClientInfo } from "../shared/context.js";

// Server context merged into every event's context: when it was received, from which client.

export interface ServerContext {
  receivedAt: string;
  userAgent?: string;
  ip?: string;
}

export function serverContext(headers: Headers, client: ClientInfo | undefined, receivedAt: Date): ServerContext {
  const out: ServerContext = { receivedAt: receivedAt.toISOString() };
  const ua = headers.get("user-agent");
  if (ua) out.userAgent = ua.slice(0, 512);
  const ip = client?.ip?.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1");
  if (ip) out.ip = ip;
  return out;
}

/**
 * The stored context: the client's own `userAgent` and `ip` win over what the server saw (a
 * server-side integration forwards its end user's), `receivedAt` is always the server's.
 */
export function mergeContext(input: Record<string, unknown>, server: ServerContext): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  if (server.userAgent !== undefined) merged.userAgent = server.userAgent;
  if (server.ip !== undefined) merged.ip = server.ip;
  assignJson(merged, input);
  merged.receivedAt = server.receivedAt;
  return merged;
}
