import type { JsonValue } from "@bufbuild/protobuf";
import { createContextKey } from "@connectrpc/connect";

/** Facts about the caller's connection that are not headers. */
export interface ClientInfo {
  ip: string;
  requestId: string;
  /** Set once the caller is authorized for a project (for logs). */
  projectId?: string;
  /** Route template or RPC name (for logs and metrics, bounded cardinality). */
  route?: string;
  /** RPCs: the gRPC status code the call ended with (0 = OK), read where its response finished. */
  rpcCode?: number;
}

export const clientInfoKey = createContextKey<ClientInfo>({ ip: "", requestId: "" });

/** The key of the per-address rate limits: the socket's peer address ("unknown" when there is none). */
export const clientAddress = (c: ClientInfo): string => c.ip || "unknown";

/**
 * Set by the REST transcoder for a method's `restJsonList` field (see ServiceBinding): the field's
 * JSON array exactly as parsed from the body. Over gRPC and Connect it is unset and the field holds
 * Value messages. Proto3 JSON maps a Value to the JSON value itself, so both carry the same data.
 */
export const restJsonListKey = createContextKey<{ items: JsonValue[]; bodyBytes: number } | undefined>(undefined);

/**
 * Set by the REST transcoder for a method in a binding's `restJsonBody` (see ServiceBinding): the
 * request body's JSON exactly as parsed, and its size in bytes. The request message then holds only
 * what the path gave; the handler validates the body itself (its one validator also serves batch
 * items). Unset over gRPC and Connect, and over REST when the body was empty or the URL had a query.
 */
export const restJsonBodyKey = createContextKey<{ json: JsonValue; bodyBytes: number } | undefined>(undefined);
