import type { PoolClient } from "pg";
import { badRequest, conflict, notFound } from "../shared/errors.js";
import { isUniqueViolation } from "../shared/pg-errors.js";
import { tx, type Db, type Queryable } from "../storage/db.js";
import { firstForeign, MAX_PAGES_PER_PROJECT, type PageEntry, type PagePatch } from "./model.js";

// Rows of pages and page_monitors (migration 7000_pages.sql) and the SQL of the page routes. A
// page and its monitors are written in one transaction. The statuses a write can end in that only
// the database can tell are thrown here, each once: a slug already used (409, the unique index),
// the project's page cap (409), a listed monitor that is not the project's (400).

interface PageMonitorRow {
  monitor_id: string;
  name: string | null;
  section: string | null;
}

export interface PageRow {
  id: string;
  project_id: string;
  slug: string;
  title: string;
  description: string | null;
  published: boolean;
  created_at: Date;
  updated_at: Date;
  /** In display order (position). */
  monitors: PageMonitorRow[];
}

/** A page with its monitors in position order, in one statement. */
const SELECT_PAGES = `SELECT p.*, COALESCE(
    (SELECT json_agg(json_build_object('monitor_id', m.monitor_id, 'name', m.name, 'section', m.section) ORDER BY m.position)
       FROM page_monitors m WHERE m.page_id = p.id), '[]'::json) AS monitors
  FROM pages p`;

/** The project's pages, oldest first. */
export async function listPages(q: Queryable, projectId: string): Promise<PageRow[]> {
  return (await q.query<PageRow>(`${SELECT_PAGES} WHERE p.project_id = $1 ORDER BY p.created_at, p.id`, [projectId]))
    .rows;
}

export async function getPage(q: Queryable, projectId: string, id: string): Promise<PageRow | undefined> {
  return (await q.query<PageRow>(`${SELECT_PAGES} WHERE p.id = $1 AND p.project_id = $2`, [id, projectId])).rows[0];
}

export interface NewPage {
  id: string;
  projectId: string;
  slug: string;
  title: string;
  description: string | null;
  published: boolean;
  monitors: PageEntry[];
  now: Date;
}

/** Creates a page and its monitors, under the project's page-creation lock (the cap). */
export function createPage(db: Db, p: NewPage): Promise<PageRow> {
  return slugUnique(p.slug, () =>
    tx(db, async (c) => {
      await c.query("SELECT pg_advisory_xact_lock(hashtextextended('vigil:pages:' || $1, 0))", [p.projectId]);
      const n = await c.query<{ n: number }>("SELECT count(*)::int AS n FROM pages WHERE project_id = $1", [
        p.projectId,
      ]);
      if (n.rows[0].n >= MAX_PAGES_PER_PROJECT)
        throw conflict(`this project has reached its limit of ${MAX_PAGES_PER_PROJECT} pages; delete one first`, [
          { field: "slug", message: `at most ${MAX_PAGES_PER_PROJECT} pages per project` },
        ]);
      await checkMonitors(c, p.projectId, p.monitors);
      await c.query(
        `INSERT INTO pages (id, project_id, slug, title, description, published, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
        [p.id, p.projectId, p.slug, p.title, p.description, p.published, p.now],
      );
      await insertMonitors(c, p.id, p.projectId, p.monitors);
      return (await getPage(c, p.projectId, p.id))!;
    }),
  );
}

/**
 * Changes the given fields and, when `monitors` is given, replaces the page's list with it.
 * 404 when the project has no such page.
 */
export function updatePage(
  db: Db,
  projectId: string,
  id: string,
  patch: PagePatch & { monitors?: PageEntry[] },
  now: Date,
): Promise<PageRow> {
  return slugUnique(patch.slug, () =>
    tx(db, async (c) => {
      const found = await c.query("SELECT id FROM pages WHERE id = $1 AND project_id = $2 FOR UPDATE", [id, projectId]);
      if (!found.rowCount) throw notFound("page");
      // The listed monitors are locked (FOR KEY SHARE) before the page's rows are: a monitor being
      // deleted meanwhile is either gone (400) or waits for this transaction (then takes its rows).
      if (patch.monitors) await checkMonitors(c, projectId, patch.monitors);
      await c.query(
        `UPDATE pages SET slug = COALESCE($2, slug), title = COALESCE($3, title),
                description = CASE WHEN $4::boolean THEN $5 ELSE description END,
                published = COALESCE($6, published), updated_at = $7
          WHERE id = $1`,
        [
          id,
          patch.slug ?? null,
          patch.title ?? null,
          patch.description !== undefined,
          patch.description ?? null,
          patch.published ?? null,
          now,
        ],
      );
      if (patch.monitors) {
        await c.query("DELETE FROM page_monitors WHERE page_id = $1", [id]);
        await insertMonitors(c, id, projectId, patch.monitors);
      }
      return (await getPage(c, projectId, id))!;
    }),
  );
}

/** False when the project has no such page. Its monitors' rows go with it (ON DELETE CASCADE). */
export async function deletePage(q: Queryable, projectId: string, id: string): Promise<boolean> {
  return ((await q.query("DELETE FROM pages WHERE id = $1 AND project_id = $2", [id, projectId])).rowCount ?? 0) > 0;
}

/**
 * 400 naming `monitors[i].monitorId` for the first entry that is not a monitor of the project
 * (unknown, or another project's: the same answer). The project's listed monitors are locked FOR
 * KEY SHARE until commit, so none of them can be deleted before the page's rows reference it.
 */
async function checkMonitors(c: PoolClient, projectId: string, entries: PageEntry[]): Promise<void> {
  if (!entries.length) return;
  const r = await c.query<{ id: string }>(
    "SELECT id FROM monitors WHERE project_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR KEY SHARE",
    [projectId, entries.map((e) => e.monitorId)],
  );
  const i = firstForeign(entries, new Set(r.rows.map((x) => x.id)));
  if (i >= 0) {
    const field = `monitors[${i}].monitorId`;
    throw badRequest(`invalid request: ${field}: is not a monitor of this project`, [
      { field, message: "is not a monitor of this project" },
    ]);
  }
}

async function insertMonitors(c: PoolClient, pageId: string, projectId: string, entries: PageEntry[]): Promise<void> {
  if (!entries.length) return;
  await c.query(
    `INSERT INTO page_monitors (page_id, project_id, monitor_id, position, name, section)
     SELECT $1, $2, e.monitor_id, e.position::int, e.name, e.section
       FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS e(monitor_id, name, section, position)`,
    [pageId, projectId, entries.map((e) => e.monitorId), entries.map((e) => e.name), entries.map((e) => e.section)],
  );
}

/** The one mapping of the slug's unique index (pages_slug_key): 409 naming `slug`, no SQL text. */
async function slugUnique<T>(slug: string | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err, "pages_slug_key"))
      throw conflict(`the slug '${slug}' is already used by a page`, [{ field: "slug", message: "already used" }]);
    throw err;
  }
}
