import { z } from "zod";
import type { JsonValue } from "@bufbuild/protobuf";
import type { ListValue, Value } from "@bufbuild/protobuf/wkt";
import type { CreatePageRequest, UpdatePageRequest } from "../../gen/vigil/v1/pages_pb.js";
import { valueToJson } from "../shared/value.js";
import { textSchema } from "../shared/text.js";
import { alsoRefused, validate } from "../shared/validate.js";
import { MAX_PAGE_MONITORS, type PageEntry } from "./model.js";

// Input rules of the page routes (docs/pages.md lists them). A page's monitors are checked item by
// item and each problem is named `monitors[i].field`, as the edge check names the fields it refuses
// (NUL in `monitors[0].name`), whether they came as PageMonitor messages (create) or as the JSON
// of a ListValue (PATCH, where `[]` empties the list and an absent one keeps it).

/** decisions.md: lowercase letters, digits and `-`, 3-64 characters. Uppercase is refused, never lowercased. */
export const PAGE_SLUG_RE = /^[a-z0-9-]{3,64}$/;

const slug = z
  .string()
  .regex(PAGE_SLUG_RE, "3-64 characters: lowercase letters, digits and '-' (uppercase is not lowercased)");
const title = textSchema({ min: 1, max: 200, plain: true });
/** Trimmed; an empty one is no description (null). */
const description = textSchema({ max: 2000 }).transform((s) => s || null);
/** A monitor's display name or section: trimmed; empty or null is none (the monitor's own name; no heading). */
const label = textSchema({ max: 100, plain: true })
  .nullable()
  .transform((s) => s || null);

const entrySchema = z.strictObject(
  {
    monitorId: z
      .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
      .min(1, "is required")
      .max(200, "is not a monitor of this project"),
    name: label.optional(),
    section: label.optional(),
  },
  "must be an object {monitorId, name?, section?}",
);

const monitorsSchema = alsoRefused(
  z
    .array(z.unknown(), "must be an array of {monitorId, name?, section?}")
    .max(MAX_PAGE_MONITORS, `at most ${MAX_PAGE_MONITORS} monitors`),
  "a monitors item that is not {monitorId (1-200 characters), name?, section?} (names and sections: plain text, at most 100 characters)",
  "a monitorId listed twice, or not a monitor of this project",
).optional();

/** Checks the entries one by one: each problem named `monitors[i].field`; a monitorId listed twice is one. */
function entries(list: unknown[] | undefined, ctx: z.RefinementCtx): PageEntry[] | undefined {
  if (list === undefined) return undefined;
  const out: PageEntry[] = [];
  const seen = new Map<string, number>();
  list.forEach((item, i) => {
    const at = `monitors[${i}]`;
    const r = entrySchema.safeParse(item);
    if (!r.success) {
      for (const issue of r.error.issues) {
        const keys = issue.code === "unrecognized_keys" ? issue.keys : [undefined];
        for (const key of keys) {
          const path = [...issue.path.map(String), ...(key === undefined ? [] : [key])];
          const message = key === undefined ? issue.message : "is not a field of a page's monitor";
          ctx.addIssue({ code: "custom", message, path: [path.length ? `${at}.${path.join(".")}` : at] });
        }
      }
      return;
    }
    const first = seen.get(r.data.monitorId);
    if (first !== undefined)
      ctx.addIssue({ code: "custom", message: `listed twice (also monitors[${first}])`, path: [`${at}.monitorId`] });
    else seen.set(r.data.monitorId, i);
    out.push({ monitorId: r.data.monitorId, name: r.data.name ?? null, section: r.data.section ?? null });
  });
  return out;
}

/** CreatePage's rules (bound to the RPC: the OpenAPI document states them). */
export const createSchema = z
  .object({
    slug,
    title,
    description: description.optional(),
    published: z.boolean().default(false),
    monitors: monitorsSchema,
  })
  .transform((v, ctx) => ({ ...v, description: v.description ?? null, monitors: entries(v.monitors, ctx) ?? [] }));

/** UpdatePage's rules (bound to the RPC). */
export const updateSchema = z
  .object({
    slug: slug.optional(),
    title: title.optional(),
    // null clears it
    description: description.nullable().optional(),
    published: z.boolean().optional(),
    monitors: monitorsSchema,
  })
  .transform((v, ctx) => ({ ...v, monitors: entries(v.monitors, ctx) }));

export type CreateInput = z.infer<typeof createSchema>;
export type UpdateInput = z.infer<typeof updateSchema>;

// Unset proto `optional` fields arrive as undefined, which the schemas read as absent.
export function createInput(req: CreatePageRequest): CreateInput {
  return validate(createSchema, {
    slug: req.slug,
    title: req.title,
    description: req.description,
    published: req.published,
    monitors: req.monitors.map((m) => ({ monitorId: m.monitorId, name: m.name, section: m.section })),
  });
}

/** What a google.protobuf.Value / ListValue field holds, as JSON (undefined when the field is absent). */
const json = (v: Value | undefined, field: string): JsonValue | undefined => valueToJson(v, field);
const list = (v: ListValue | undefined, field: string): JsonValue | undefined =>
  v === undefined ? undefined : v.values.map((x, i) => valueToJson(x, `${field}[${i}]`) ?? null);

export function updateInput(req: UpdatePageRequest): UpdateInput {
  return validate(updateSchema, {
    slug: req.slug,
    title: req.title,
    description: json(req.description, "description"),
    published: req.published,
    monitors: list(req.monitors, "monitors"),
  });
}
