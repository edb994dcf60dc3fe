import { tx, type Db, type Queryable } from "../storage/db.js";

// Rows of page_subscribers, page_notices and page_mails (9013_page_subscribers.sql) and the SQL of
// the subscriber routes and of the mail sender. Subscribing counts and inserts under the page's
// advisory lock (the per-page cap, across nodes); a notice and its mails are one statement inside
// the transaction that stored their cause; a mail is claimed under a lease (SKIP LOCKED) and
// deleted once sent.

/** NOTIFY channel that wakes the mail senders (sent on commit by the statement that queued mails). */
export const MAILS_CHANNEL = "vigil_page_mails";

export interface SubscriberRow {
  id: string;
  page_id: string;
  /** An email subscriber's address (null for a webhook subscriber). */
  email: string | null;
  /** A webhook subscriber's URL (null for an email subscriber). */
  url: string | null;
  confirmed_at: Date | null;
  created_at: Date;
}

/** The columns of a SubscriberRow. */
const SUBSCRIBER_COLUMNS = "id, page_id, email, url, confirmed_at, created_at";

/** Takes the page's subscriber lock (the per-page cap, across nodes) for the rest of the transaction. */
const lockPage = (c: Queryable, pageId: string) =>
  c.query("SELECT pg_advisory_xact_lock(hashtextextended('vigil:page-subscribers:' || $1, 0))", [pageId]);

const countSubscribers = async (c: Queryable, pageId: string) =>
  (await c.query<{ n: number }>("SELECT count(*)::int AS n FROM page_subscribers WHERE page_id = $1", [pageId])).rows[0]
    .n;

export interface PublicPage {
  id: string;
  project_id: string;
  slug: string;
  title: string;
}

/** A published page by its slug (what the public routes may reach). */
export async function publishedPage(q: Queryable, slug: string): Promise<PublicPage | undefined> {
  return (
    await q.query<PublicPage>("SELECT id, project_id, slug, title FROM pages WHERE slug = $1 AND published", [slug])
  ).rows[0];
}

/** What a subscription request did: `mail` a new confirmation link; `none`: confirmed already, or the page is full. */
export type SubscribeOutcome = { action: "mail"; subscriberId: string } | { action: "none"; why: "confirmed" | "full" };

/**
 * Adds the address as pending with the token's hash (or gives a pending one a new token), under
 * the page's lock: a page holds at most `max` subscribers, pending or confirmed. Pending rows whose
 * link expired are removed first (they hold no place).
 */
export function subscribe(
  db: Db,
  page: PublicPage,
  s: { id: string; email: string; confirmHash: string; expiresAt: Date; now: Date; max: number },
): Promise<SubscribeOutcome> {
  return tx(db, async (c) => {
    await lockPage(c, page.id);
    await c.query(
      "DELETE FROM page_subscribers WHERE page_id = $1 AND confirmed_at IS NULL AND confirm_expires_at <= $2",
      [page.id, s.now],
    );
    const known = (
      await c.query<{ id: string; confirmed_at: Date | null }>(
        "SELECT id, confirmed_at FROM page_subscribers WHERE page_id = $1 AND lower(email) = lower($2)",
        [page.id, s.email],
      )
    ).rows[0];
    if (known?.confirmed_at) return { action: "none", why: "confirmed" };
    if (known) {
      await c.query("UPDATE page_subscribers SET confirm_hash = $2, confirm_expires_at = $3 WHERE id = $1", [
        known.id,
        s.confirmHash,
        s.expiresAt,
      ]);
      return { action: "mail", subscriberId: known.id };
    }
    if ((await countSubscribers(c, page.id)) >= s.max) return { action: "none", why: "full" };
    await c.query(
      `INSERT INTO page_subscribers (id, page_id, project_id, email, confirm_hash, confirm_expires_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [s.id, page.id, page.project_id, s.email, s.confirmHash, s.expiresAt, s.now],
    );
    return { action: "mail", subscriberId: s.id };
  });
}

/** What adding a webhook subscriber did: added, or refused (the page is full, or has that URL already). */
export type AddOutcome = { added: SubscriberRow } | { refused: "full" | "exists" };

/**
 * Adds a webhook subscriber to the project's page, confirmed now, under the page's lock (the same
 * per-page cap as the email subscribers). Undefined when the project has no such page.
 */
export function addWebhookSubscriber(
  db: Db,
  s: { id: string; projectId: string; pageId: string; url: string; secret: string; now: Date; max: number },
): Promise<AddOutcome | undefined> {
  return tx(db, async (c) => {
    if (!(await projectPage(c, s.projectId, s.pageId))) return undefined;
    await lockPage(c, s.pageId);
    const known = await c.query("SELECT 1 FROM page_subscribers WHERE page_id = $1 AND url = $2", [s.pageId, s.url]);
    if (known.rowCount) return { refused: "exists" };
    if ((await countSubscribers(c, s.pageId)) >= s.max) return { refused: "full" };
    const r = await c.query<SubscriberRow>(
      `INSERT INTO page_subscribers (id, page_id, project_id, url, secret, confirmed_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING ${SUBSCRIBER_COLUMNS}`,
      [s.id, s.pageId, s.projectId, s.url, s.secret, s.now],
    );
    return { added: r.rows[0] };
  });
}

/** Confirms the pending subscriber of the page holding this token's hash (single use: the hash is cleared). */
export async function confirm(q: Queryable, pageId: string, confirmHash: string, now: Date): Promise<boolean> {
  const r = await q.query(
    `UPDATE page_subscribers SET confirmed_at = $3, confirm_hash = NULL, confirm_expires_at = NULL
      WHERE page_id = $1 AND confirm_hash = $2 AND confirm_expires_at > $3`,
    [pageId, confirmHash, now],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Deletes the subscriber (and, by cascade, its mails not yet sent). False when the page has no such subscriber. */
export async function removeSubscriber(q: Queryable, pageId: string, id: string): Promise<boolean> {
  const r = await q.query("DELETE FROM page_subscribers WHERE id = $1 AND page_id = $2", [id, pageId]);
  return (r.rowCount ?? 0) > 0;
}

/** The project's page (owners' routes: another project's page is as unknown as none). */
export async function projectPage(q: Queryable, projectId: string, pageId: string): Promise<boolean> {
  return (
    ((await q.query("SELECT 1 FROM pages WHERE id = $1 AND project_id = $2", [pageId, projectId])).rowCount ?? 0) > 0
  );
}

/** The page's subscribers oldest first, `limit + 1` of them after `after`. */
export async function listSubscribers(
  q: Queryable,
  pageId: string,
  limit: number,
  after?: { createdAt: Date; id: string },
): Promise<SubscriberRow[]> {
  return (
    await q.query<SubscriberRow>(
      `SELECT ${SUBSCRIBER_COLUMNS} FROM page_subscribers
        WHERE page_id = $1 AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4))
        ORDER BY created_at, id LIMIT $2`,
      [pageId, limit + 1, after?.createdAt ?? null, after?.id ?? null],
    )
  ).rows;
}

/** A notice as it is queued: its cause's type, dedupe key and what the mail says. */
export interface QueuedNotice {
  projectId: string;
  monitorIds: readonly string[];
  eventType: string;
  dedupeKey: string;
  payload: Record<string, unknown>;
  now: Date;
}

/**
 * Inside the transaction that stored the cause: one notice per published page listing one of the
 * monitors and having confirmed subscribers (once per page and dedupe key), one mail per confirmed
 * subscriber, one statement; the NOTIFY wakes the senders on commit. Returns the mails queued.
 */
export async function queueNotice(q: Queryable, n: QueuedNotice): Promise<number> {
  const r = await q.query<{ n: number }>(
    `WITH hit AS (
       SELECT DISTINCT pm.page_id FROM page_monitors pm JOIN pages p ON p.id = pm.page_id AND p.published
        WHERE pm.project_id = $1 AND pm.monitor_id = ANY($2::text[])
          AND EXISTS (SELECT 1 FROM page_subscribers s WHERE s.page_id = pm.page_id AND s.confirmed_at IS NOT NULL)),
     notices AS (
       INSERT INTO page_notices (id, page_id, project_id, dedupe_key, event_type, payload, created_at)
       SELECT 'pn_' || substr(md5(random()::text || hit.page_id), 1, 20), hit.page_id, $1, $3, $4, $5, $6 FROM hit
       ON CONFLICT (page_id, dedupe_key) DO NOTHING
       RETURNING id, page_id),
     mails AS (
       INSERT INTO page_mails (notice_id, subscriber_id, due_at)
       SELECT n.id, s.id, $6 FROM notices n JOIN page_subscribers s ON s.page_id = n.page_id AND s.confirmed_at IS NOT NULL
       RETURNING 1),
     c AS (SELECT count(*)::int AS n FROM mails)
     SELECT c.n, CASE WHEN c.n > 0 THEN pg_notify($7, '')::text END AS notified FROM c`,
    [n.projectId, n.monitorIds, n.dedupeKey, n.eventType, JSON.stringify(n.payload), n.now, MAILS_CHANNEL],
  );
  return r.rows[0]?.n ?? 0;
}

export interface ClaimedMail {
  notice_id: string;
  subscriber_id: string;
  attempts: number;
  /** The subscriber's address: an email, or a URL and its signing secret. */
  email: string | null;
  url: string | null;
  secret: string | null;
  project_id: string;
  page_id: string;
  notice_at: Date;
  event_type: string;
  payload: Record<string, unknown>;
  page_slug: string;
  page_title: string;
}

/** Claims up to `max` due mails under a lease until `leaseUntil` (a crash before they are finished: due again then). */
export async function claimMails(
  q: Queryable,
  now: Date,
  leaseUntil: Date,
  token: string,
  max: number,
): Promise<ClaimedMail[]> {
  return (
    await q.query<ClaimedMail>(
      `WITH due AS (
         SELECT notice_id, subscriber_id FROM page_mails WHERE due_at <= $1 ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       claimed AS (
         UPDATE page_mails m SET due_at = $3, lease_token = $4, attempts = m.attempts + 1
           FROM due WHERE m.notice_id = due.notice_id AND m.subscriber_id = due.subscriber_id
         RETURNING m.notice_id, m.subscriber_id, m.attempts)
       SELECT c.notice_id, c.subscriber_id, c.attempts, s.email, s.url, s.secret, n.project_id, n.page_id, n.created_at AS notice_at,
              n.event_type, n.payload, p.slug AS page_slug, p.title AS page_title
         FROM claimed c JOIN page_subscribers s ON s.id = c.subscriber_id
         JOIN page_notices n ON n.id = c.notice_id JOIN pages p ON p.id = n.page_id`,
      [now, max, leaseUntil, token],
    )
  ).rows;
}

/**
 * The outcome of claimed mails (still under this lease): `done` ones are deleted (sent, or given up),
 * `retry` ones are due again at their time; notices left without mails go too.
 */
export async function finishMails(
  q: Queryable,
  token: string,
  done: { noticeId: string; subscriberId: string }[],
  retry: { noticeId: string; subscriberId: string; dueAt: Date }[],
): Promise<void> {
  await q.query(
    `WITH gone AS (
       DELETE FROM page_mails m USING unnest($2::text[], $3::text[]) AS d(notice_id, subscriber_id)
        WHERE m.notice_id = d.notice_id AND m.subscriber_id = d.subscriber_id AND m.lease_token = $1
       RETURNING m.notice_id),
     again AS (
       UPDATE page_mails m SET due_at = d.due_at, lease_token = NULL
         FROM unnest($4::text[], $5::text[], $6::timestamptz[]) AS d(notice_id, subscriber_id, due_at)
        WHERE m.notice_id = d.notice_id AND m.subscriber_id = d.subscriber_id AND m.lease_token = $1
       RETURNING 1)
     DELETE FROM page_notices n WHERE n.id IN (SELECT notice_id FROM gone)
        AND NOT EXISTS (SELECT 1 FROM page_mails m WHERE m.notice_id = n.id AND NOT (m.notice_id, m.subscriber_id) IN
          (SELECT d.notice_id, d.subscriber_id FROM unnest($2::text[], $3::text[]) AS d(notice_id, subscriber_id)))`,
    [
      token,
      done.map((d) => d.noticeId),
      done.map((d) => d.subscriberId),
      retry.map((d) => d.noticeId),
      retry.map((d) => d.subscriberId),
      retry.map((d) => d.dueAt),
    ],
  );
}

/** When the next mail falls due (undefined: none queued). */
export async function nextMailDue(q: Queryable): Promise<Date | undefined> {
  return (await q.query<{ at: Date | null }>("SELECT min(due_at) AS at FROM page_mails")).rows[0]?.at ?? undefined;
}
