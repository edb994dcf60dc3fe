import type { z } from "zod";
import { badRequest } from "./errors.js";

/** Validates with zod; failures are a 400 whose details name every offending field. */
export function validate<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details = r.error.issues.map((i) => ({ field: i.path.join(".") || "(body)", message: i.message }));
  throw badRequest(`invalid request: ${details.map((d) => `${d.field}: ${d.message}`).join("; ")}`, details);
}
