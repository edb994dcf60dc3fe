import { z } from "zod";
import { PAGE_SLUG_RE } from "../pages/requests.js";
import { validate } from "../shared/validate.js";

// The one input of the public pages: a page's slug, by the rule pages are created with
// (PAGE_SLUG_RE, src/pages/requests.ts; decisions.md: 3-64 lowercase letters, digits and `-`). A
// slug with uppercase letters is a 400, never lowercased (it would make two addresses of one page,
// and caches keyed by the address would hold it twice); anything else outside the grammar is a 400
// too, before any lookup. The badge's `?monitor=` is a monitor slug,
// looked up in the snapshot only (any string: a miss is a 404).

export const slugSchema = z.object({
  slug: z
    .string()
    .superRefine((s, ctx) => {
      if (PAGE_SLUG_RE.test(s)) return;
      ctx.addIssue({
        code: "custom",
        message: /[A-Z]/.test(s)
          ? "must be lowercase: a page's address is not lowercased"
          : "must be 3-64 characters: lowercase letters, digits and '-'",
      });
    })
    .meta({ pattern: PAGE_SLUG_RE.source }), // the refinement's grammar, for the OpenAPI document
});

/** The slug, or a 400 `validation_failed` naming `slug`. */
export function parseSlug(slug: string): string {
  return validate(slugSchema, { slug }).slug;
}
