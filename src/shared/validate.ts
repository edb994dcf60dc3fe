import type { z } from "zod";
import { badRequest } from "./errors.js";

/**
 * Validates with zod; failures are a 400 whose details name every offending field. A key that is no
 * field of a strict object (a free-form JSON field checked here, as an alert's `query`) is refused
 * alone, as the transcoder refuses one in a message (src/transcoding/decode.ts): `unknown field
 * 'resolve.extra'`, first, since the rest of the body may be read differently by the sender.
 */
export function validate<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const unknown = r.error.issues.find((i) => i.code === "unrecognized_keys");
  if (unknown?.code === "unrecognized_keys") {
    const field = [...unknown.path.map(String), unknown.keys[0]].join(".");
    throw badRequest(`unknown field '${field}': the request body has no such field`, [
      { field, message: "unknown field" },
    ]);
  }
  const details = r.error.issues.map((i) => ({ field: i.path.join(".") || "(body)", message: i.message }));
  throw badRequest(`invalid request: ${details.map((d) => `${d.field}: ${d.message}`).join("; ")}`, details);
}
