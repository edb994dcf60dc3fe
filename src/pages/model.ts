// Pure decisions of page management (docs/pages.md): the bounds of a page and of a project's pages,
// and which listed monitor the project does not have.

/** A page lists at most this many monitors. */
export const MAX_PAGE_MONITORS = 100;
/** A project holds at most this many pages (the list is not paginated). */
export const MAX_PAGES_PER_PROJECT = 100;

/** A monitor as a page lists it: the display name and section are null when not given. */
export interface PageEntry {
  monitorId: string;
  name: string | null;
  section: string | null;
}

/**
 * The index of the first entry whose monitor is not one of `owned` (the project's monitors among
 * those listed), or -1. Unknown ids and other projects' monitors are the same answer: a page never
 * tells whether a monitor exists elsewhere.
 */
export function firstForeign(entries: readonly PageEntry[], owned: ReadonlySet<string>): number {
  return entries.findIndex((e) => !owned.has(e.monitorId));
}

/** The fields a PATCH changes on the page row itself (the monitors are replaced separately). */
export interface PagePatch {
  slug?: string;
  title?: string;
  description?: string | null;
  published?: boolean;
}

/** True when a PATCH changes nothing: the page is answered as it is, `updatedAt` unchanged. */
export function isEmptyPatch(p: PagePatch & { monitors?: readonly PageEntry[] }): boolean {
  return (
    p.slug === undefined &&
    p.title === undefined &&
    p.description === undefined &&
    p.published === undefined &&
    p.monitors === undefined
  );
}
