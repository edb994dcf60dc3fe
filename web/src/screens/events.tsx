import { Component } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { Event as VigilEvent } from "../../../gen/vigil/v1/events_pb.js";
import { api, Code, ConnectError } from "../api.js";
import { useProject } from "../session.js";
import { curlPost } from "../ui/curl.js";
import { filterFromQuery, filterToQuery, filterToValue, FilterBuilder, type Filter } from "../ui/filters.js";
import { formatTime } from "../ui/format.js";
import { useAsync, useInterval } from "../ui/hooks.js";
import { Button, Empty, ErrorMessage, Loading, PageHeader } from "../ui/kit.js";
import { rangeOf, TimeRangePicker } from "../ui/time-range.js";
import { useQueryState } from "../ui/url-state.js";
import "./events.css";

// The events screen: the project's events through the canonical query (AnalyticsService.QueryEvents),
// filtered by the filter builder and a time range (both in the URL), in pages (keyset cursors), or
// as a live tail (`?live=1`) that polls once a second for events newer than the newest shown. An
// event's detail opens from its row (`?event=<id>`, a link to share).

const PAGE_SIZE = 50;
/** The tail keeps at most this many rows (newest first); older ones leave the page. */
const TAIL_MAX = 500;
const TAIL_POLL_MS = 1000;
/**
 * Each poll looks back this far behind the newest shown event, so events stamped earlier than they
 * arrive (an SDK's batch, commits out of order) are still caught; known ids are skipped.
 */
const TAIL_OVERLAP_MS = 30_000;
/** Pages of 100 one poll may read (TAIL_MAX newest events at most). */
const TAIL_PAGES = TAIL_MAX / 100;

/** An event as a row: its preview computed once. */
interface Row {
  ev: VigilEvent;
  preview: string;
}
const toRow = (ev: VigilEvent): Row => ({ ev, preview: preview(ev.data) });

/** A compact one-line view of an event's data: `plan: "pro", amount: 42, items: [3]`. */
function preview(data: Record<string, unknown> | undefined): string {
  if (!data) return "";
  const parts: string[] = [];
  let len = 0;
  for (const [k, v] of Object.entries(data)) {
    const text =
      v !== null && typeof v === "object"
        ? Array.isArray(v)
          ? `[${v.length}]`
          : "{…}"
        : typeof v === "string"
          ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)
          : String(v);
    parts.push(`${k}: ${text}`);
    len += k.length + text.length + 2;
    if (len > 160) break;
  }
  return parts.join(", ");
}

/** An event's time to the millisecond, in the reader's time zone (the full ISO text on hover). */
const eventTime = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  fractionalSecondDigits: 3,
});
const formatEventTime = (iso: string) => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : eventTime.format(d);
};

/** Newest first: timestamp, then id (the API's order). */
const newerFirst = (a: Row, b: Row) =>
  a.ev.timestamp < b.ev.timestamp ? 1 : a.ev.timestamp > b.ev.timestamp ? -1 : a.ev.id < b.ev.id ? 1 : -1;

export function Events() {
  const { project } = useProject();
  const [query, set] = useQueryState();
  const filter = filterFromQuery(query.filter);
  const live = query.live === "1";
  const selected = query.event;

  const any = useAsync(() => api.events.listEvents({ projectId: project.id, limit: 1 }), [project.id]);
  const hasEvents = any.data ? any.data.data.length > 0 : undefined;

  const detailHref = (id: string) => {
    const q = new URLSearchParams(query);
    q.set("event", id);
    return `?${q.toString()}`;
  };

  return (
    <>
      <PageHeader
        title="Events"
        subtitle={live ? "New events appear as they arrive." : "Events of this project, newest first."}
        actions={
          <div class="segmented" role="group" aria-label="View">
            <Button
              variant={live ? "secondary" : "primary"}
              aria-pressed={!live}
              onClick={() => set({ live: undefined }, true)}
            >
              Browse
            </Button>
            <Button
              variant={live ? "primary" : "secondary"}
              aria-pressed={live}
              onClick={() => set({ live: "1" }, true)}
            >
              Live tail
            </Button>
          </div>
        }
      />
      {hasEvents !== false && (
        <section class="card events-query">
          {!live && (
            <div class="toolbar">
              <TimeRangePicker query={query} set={(c) => set(c, true)} />
            </div>
          )}
          <FilterBuilder
            projectId={project.id}
            value={filter}
            onChange={(f) => set({ filter: filterToQuery(f) }, true)}
          />
        </section>
      )}
      {hasEvents === false && <FirstEvent projectId={project.id} />}
      {live ? (
        <Tail
          projectId={project.id}
          filter={filter}
          detailHref={detailHref}
          onFirst={() => hasEvents === false && any.reload()}
          key={`${project.id} ${query.filter ?? ""}`}
        />
      ) : (
        hasEvents !== false && <Browse projectId={project.id} filter={filter} query={query} detailHref={detailHref} />
      )}
      {selected && (
        <EventDetail projectId={project.id} eventId={selected} onClose={() => set({ event: undefined }, true)} />
      )}
    </>
  );
}

/** A project without events: how to send the first one. */
function FirstEvent({ projectId }: { projectId: string }) {
  const curl = curlPost("/v1/events", { type: "signup", userId: "user_1", data: { plan: "pro" } });
  return (
    <div class="events-empty">
      <Empty title="No events yet">
        <p>
          Send this project's first event with an API key. <a href={`/projects/${projectId}/keys`}>Create an API key</a>
          , then:
        </p>
        <pre>{curl}</pre>
        <p class="muted">Events sent to the project appear in the live tail without reloading.</p>
      </Empty>
    </div>
  );
}

/** Pages of the matching events in the chosen time range; cursors kept to go back. */
function Browse(props: {
  projectId: string;
  filter: Filter | undefined;
  query: Record<string, string>;
  detailHref: (id: string) => string;
}) {
  const { query } = props;
  // The window is fixed when the query changes (not on every page), so pages line up.
  const [refreshed, setRefreshed] = useState(0);
  const range = useMemo(
    () => rangeOf(query),
    [query.range, query.from, query.to, query.filter, refreshed, props.projectId],
  );
  // The cursors of the pages before this one; a new window starts again at the first page.
  const [paging, setPaging] = useState<{ range: typeof range; cursors: string[] }>({ range, cursors: [] });
  const cursors = paging.range === range ? paging.cursors : [];
  const setCursors = (f: (c: string[]) => string[]) => setPaging({ range, cursors: f(cursors) });
  const cursor = cursors[cursors.length - 1];
  const page = useAsync(
    (signal) =>
      api.analytics.queryEvents(
        {
          projectId: props.projectId,
          filters: filterToValue(props.filter),
          time: { start: range.from, end: range.to },
          pagination: { limit: BigInt(PAGE_SIZE), cursor },
        },
        { signal },
      ),
    [range, cursor],
  );
  const rows = useMemo(() => (page.data?.data ?? []).map(toRow), [page.data]);
  const next = page.data?.pagination?.nextCursor;
  const pageNo = cursors.length + 1;
  return (
    <section aria-label="Matching events" class="events-list">
      <ErrorMessage error={page.error} />
      {page.loading && !page.data ? (
        <Loading />
      ) : rows.length === 0 && !page.error ? (
        <Empty title="No matching events">
          <p>No event matches these filters in this time range. Widen the range or remove a filter.</p>
        </Empty>
      ) : (
        rows.length > 0 && <EventTable rows={rows} detailHref={props.detailHref} testid="events" busy={page.loading} />
      )}
      <nav class="pager" aria-label="Pages">
        <Button disabled={cursors.length === 0} onClick={() => setCursors((c) => c.slice(0, -1))}>
          ← Newer
        </Button>
        <span class="muted" aria-live="polite">
          Page {pageNo}
        </span>
        <Button disabled={!next} onClick={() => next && setCursors((c) => [...c, next])}>
          Older →
        </Button>
        <Button variant="link" onClick={() => setRefreshed((n) => n + 1)}>
          Refresh
        </Button>
      </nav>
    </section>
  );
}

/**
 * The live tail: every second, the events newer than the newest shown (looking back TAIL_OVERLAP_MS
 * for events committed out of order, known ids skipped), merged once per poll, TAIL_MAX rows at most.
 */
function Tail(props: {
  projectId: string;
  filter: Filter | undefined;
  detailHref: (id: string) => string;
  onFirst: () => void;
}) {
  const [rows, setRows] = useState<Row[]>([]);
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<unknown>();
  const [started, setStarted] = useState(false);
  const [dropped, setDropped] = useState(false);
  const state = useRef({ busy: false, since: Date.now() - 3_600_000, ids: new Set<string>(), rows: [] as Row[] });

  const poll = async () => {
    const s = state.current;
    if (s.busy || paused) return;
    s.busy = true;
    const newest = s.rows[0]?.ev.timestamp;
    const start = newest
      ? new Date(new Date(newest).getTime() - TAIL_OVERLAP_MS).toISOString()
      : new Date(s.since).toISOString();
    const polledAt = Date.now();
    try {
      const fresh: Row[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < TAIL_PAGES; i++) {
        const r = await api.analytics.queryEvents({
          projectId: props.projectId,
          filters: filterToValue(props.filter),
          // Events may be stamped up to 24 hours ahead of their arrival (docs/events.md).
          time: { start, end: new Date(polledAt + 25 * 3_600_000).toISOString() },
          pagination: { limit: 100n, cursor },
        });
        let added = 0;
        for (const ev of r.data) {
          if (s.ids.has(ev.id)) continue;
          fresh.push(toRow(ev));
          added++;
        }
        cursor = r.pagination?.nextCursor;
        // A page of known events: the rest of the window was read before.
        if (!cursor || added === 0) break;
        if (i === TAIL_PAGES - 1) setDropped(true);
      }
      setError(undefined);
      if (!newest) s.since = polledAt - TAIL_OVERLAP_MS;
      if (fresh.length) {
        const merged = fresh.concat(s.rows).sort(newerFirst).slice(0, TAIL_MAX);
        s.rows = merged;
        s.ids = new Set(merged.map((r) => r.ev.id));
        setRows(merged);
        props.onFirst();
      }
    } catch (err) {
      setError(err);
      // A query the server refuses (a bad filter value) would be refused every second: stop asking.
      if (err instanceof ConnectError && err.code === Code.InvalidArgument) setPaused(true);
    } finally {
      s.busy = false;
      setStarted(true);
    }
  };
  useEffect(() => {
    void poll();
  }, []);
  useInterval(poll, paused ? undefined : TAIL_POLL_MS);

  return (
    <section aria-label="Live tail" class="events-list">
      <div class="tail-bar">
        <span class={paused ? "tail-state" : "tail-state tail-live"} role="status">
          {paused ? "Paused" : "Live"}
        </span>
        <Button onClick={() => setPaused((p) => !p)} aria-pressed={paused}>
          {paused ? "Resume" : "Pause"}
        </Button>
        <span class="muted">
          {rows.length === 0
            ? "Waiting for events…"
            : `${rows.length} event${rows.length === 1 ? "" : "s"} shown${rows.length >= TAIL_MAX ? ` (the newest ${TAIL_MAX})` : ""}.`}
          {dropped && " More arrived than one page of the tail shows; Browse lists them all."}
        </span>
      </div>
      <ErrorMessage error={error} />
      {!started ? (
        <Loading />
      ) : (
        <EventTable rows={rows} detailHref={props.detailHref} testid="tail" rowTestid="tail-row" />
      )}
    </section>
  );
}

/**
 * The rows, as an ARIA table of CSS grid rows: each row skips layout and paint while off screen
 * (`content-visibility: auto`, which table rows do not support), so a batch of 500 new rows costs
 * only the ones in view. Rows are components that re-render only when their event changes.
 */
function EventTable(props: {
  rows: Row[];
  detailHref: (id: string) => string;
  testid: string;
  rowTestid?: string;
  busy?: boolean;
}) {
  return (
    <div class="events-table" role="table" aria-label="Events" aria-busy={props.busy || undefined}>
      <div role="rowgroup" class="events-head">
        <div role="row" class="event-row">
          <span role="columnheader">Time</span>
          <span role="columnheader">Type</span>
          <span role="columnheader">User</span>
          <span role="columnheader">Data</span>
        </div>
      </div>
      <div
        role="rowgroup"
        class="events-body"
        data-testid={props.testid}
        data-newest-ts={props.rows[0]?.ev.timestamp ?? ""}
      >
        {props.rows.map((r) => (
          <EventRow key={r.ev.id} row={r} href={props.detailHref(r.ev.id)} testid={props.rowTestid} />
        ))}
      </div>
    </div>
  );
}

class EventRow extends Component<{ row: Row; href: string; testid?: string }> {
  shouldComponentUpdate(next: { row: Row; href: string }) {
    return next.row !== this.props.row || next.href !== this.props.href;
  }
  render() {
    const { row, href, testid } = this.props;
    const ev = row.ev;
    return (
      <div role="row" class="event-row" data-testid={testid} data-id={ev.id}>
        <span role="cell" class="col-time" title={ev.timestamp}>
          {formatEventTime(ev.timestamp)}
        </span>
        <span role="cell" class="col-type">
          <a href={href} class="event-link">
            {ev.type}
          </a>
        </span>
        <span role="cell" class="col-user">
          {ev.userId ?? <span class="muted">—</span>}
        </span>
        <span role="cell" class="col-data">
          <code>{row.preview}</code>
        </span>
      </div>
    );
  }
}

/** One event in full: its data, context and tags as JSON. */
function EventDetail(props: { projectId: string; eventId: string; onClose: () => void }) {
  const ev = useAsync(
    (signal) => api.events.getEvent({ projectId: props.projectId, eventId: props.eventId }, { signal }),
    [props.projectId, props.eventId],
  );
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    // Focus moves into the panel, and back where it was (the row's link) when the panel closes.
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    close.current?.focus();
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && props.onClose();
    addEventListener("keydown", onKey);
    return () => {
      removeEventListener("keydown", onKey);
      if (before?.isConnected) before.focus();
    };
  }, [props.eventId]);
  const e = ev.data?.data;
  return (
    <aside class="event-detail" role="dialog" aria-labelledby="event-detail-title" data-testid="event-detail">
      <header>
        <h2 id="event-detail-title">{e ? e.type : "Event"}</h2>
        <button ref={close} type="button" class="btn btn-secondary" onClick={props.onClose}>
          Close
        </button>
      </header>
      <ErrorMessage error={ev.error} />
      {!e && !ev.error && <Loading />}
      {e && (
        <>
          <dl class="event-facts">
            <dt>Time</dt>
            <dd title={e.timestamp}>{formatTime(e.timestamp)}</dd>
            <dt>User</dt>
            <dd>{e.userId ?? "—"}</dd>
            {e.groupId && (
              <>
                <dt>Group</dt>
                <dd>{e.groupId}</dd>
              </>
            )}
            {e.sourceId && (
              <>
                <dt>Source</dt>
                <dd>{e.sourceId}</dd>
              </>
            )}
            <dt>Event ID</dt>
            <dd>
              <code>{e.id}</code>
            </dd>
          </dl>
          <h3>Data</h3>
          <pre data-testid="event-data">{JSON.stringify(e.data ?? {}, null, 2)}</pre>
          <h3>Context</h3>
          <pre>{JSON.stringify(e.context ?? {}, null, 2)}</pre>
          <h3>Tags</h3>
          <pre>{JSON.stringify(e.tags ?? {}, null, 2)}</pre>
        </>
      )}
    </aside>
  );
}
