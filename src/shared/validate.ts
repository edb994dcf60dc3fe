import { z } from "zod";
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

/** The JSON Schema keyword under which a zod rule carries what JSON Schema cannot state (see alsoRefused). */
export const ALSO_REFUSED = "x-vigil-also-refused";

/**
 * A zod rule marked with what its JSON Schema cannot state and the server still refuses with a 400: a
 * rule across fields (`start` before `end`), a cursor only this list issued, a bound that depends on
 * two values. Written beside the rule it belongs to; the OpenAPI document lists each on the
 * operations that use the schema (`x-vigil-also-refused`, src/openapi/rules.ts) and in their text.
 */
export function alsoRefused<T extends z.ZodType>(schema: T, ...rules: string[]): T {
  // meta() replaces a schema's metadata: keep what an inner alsoRefused said.
  const before = (schema.meta()?.[ALSO_REFUSED] as string[] | undefined) ?? [];
  return schema.meta({ ...schema.meta(), [ALSO_REFUSED]: [...before, ...rules] }) as T;
}

/** The JSON Schema keyword of a batch item checked alone (see batchItem). */
export const BATCH_ITEM = "x-vigil-batch-item";

/**
 * A batch's item as a rule states it: any JSON value, because each is checked alone (as `shape`
 * says) and one that fails is refused alone, in the answer's `errors`, while the others are stored
 * (the spec's batch semantics): no item makes the request a 4xx, so the document types items as any.
 */
export function batchItem(shape: string): z.ZodUnknown {
  return z.unknown().meta({
    description: `Any JSON value: each is checked alone as ${shape}, and one that is not is refused alone (in the answer's \`errors\`, by index).`,
    [BATCH_ITEM]: true,
  }) as z.ZodUnknown;
}
