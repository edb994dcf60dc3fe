import { createContextKey } from "@connectrpc/connect";

/** Facts about the caller's connection that are not headers. */
export interface ClientInfo {
  ip: string;
  requestId: string;
}

export const clientInfoKey = createContextKey<ClientInfo>({ ip: "", requestId: "" });
