import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { useRoute } from "preact-iso";
import type { Event as VigilEvent } from "../../../gen/vigil/v1/events_pb.js";
import type { User } from "../../../gen/vigil/v1/identity_pb.js";
import type { Job } from "../../../gen/vigil/v1/jobs_pb.js";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { curlPost } from "../ui/curl.js";
import { filterToValue } from "../ui/filters.js";
import { formatNumber, formatTime, timeAgo } from "../ui/format.js";
import { useAction, useAsync, useInterval } from "../ui/hooks.js";
import { Button, ConfirmButton, Empty, ErrorMessage, Loading, PageHeader, StatusBadge } from "../ui/kit.js";
import { useQueryState } from "../ui/url-state.js";
import "./users.css";

// The project's users (IdentityService: made from events that carry a userId and from identify),
// newest activity first, with each one's event count; a user's page with their properties and
// events. The counts come from the analytics Group RPC (userId, restricted to the listed users),
// so the user record's REST shape stays as the spec fixes it (eventCount only on a single user).

const PAGE_SIZE = 50;
const EVENTS_PAGE = 25;

/** Every event a project can hold: accepted timestamps run from 2000 to 24 h after receipt. */
function allTime() {
  return { start: "2000-01-01T00:00:00Z", end: new Date(Date.now() + 2 * 86_400_000).toISOString() };
}

/** Event counts per externalId (the events' userId), for the users on one page. */
async function eventCounts(projectId: string, users: User[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (users.length === 0) return counts;
  const r = await api.analytics.group({
    projectId,
    filters: filterToValue({ and: [{ field: "userId", operator: "in", value: users.map((u) => u.externalId) }] }),
    time: allTime(),
    groupBy: ["userId"],
    limit: BigInt(users.length),
  });
  for (const g of r.data?.groups ?? []) {
    if (typeof g.userId === "string") counts.set(g.userId, Number(g.count ?? 0));
  }
  return counts;
}

/** A property value as short text: strings as they are, anything else as JSON. */
function valueText(v: JsonValue | undefined, max = 60): string {
  const s = typeof v === "string" ? v : JSON.stringify(v ?? null);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** A few properties as key/value chips, and how many more there are. */
function CompactProperties({ properties, show = 3 }: { properties: JsonObject | undefined; show?: number }) {
  const entries = Object.entries(properties ?? {});
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <span class="props">
      {entries.slice(0, show).map(([k, v]) => (
        <span class="prop" key={k}>
          <span class="prop-key">{k}</span> <span>{valueText(v, 40)}</span>
        </span>
      ))}
      {entries.length > show && <span class="muted">+{entries.length - show} more</span>}
    </span>
  );
}

export function Users() {
  const { project } = useProject();
  const [query, setQuery] = useQueryState();
  const page = Math.max(1, Math.floor(Number(query.page)) || 1);
  const offset = (page - 1) * PAGE_SIZE;
  const users = useAsync(async () => {
    const r = await api.identity.listUsers({ projectId: project.id, limit: PAGE_SIZE, offset });
    // The offset travels with its answer: until the next page arrives, the range shown is this one's.
    return { users: r.data, total: Number(r.meta?.total ?? 0), offset };
  }, [project.id, offset]);
  const counts = useAsync(async () => {
    const list = users.data?.users;
    // Kept with the list it counts: a newer page never shows the previous page's counts.
    return list ? { list, counts: await eventCounts(project.id, list) } : undefined;
  }, [project.id, users.data]);
  const data = users.data;
  const last = data ? Math.min(data.offset + data.users.length, data.total) : 0;
  return (
    <>
      <PageHeader
        title="Users"
        subtitle="The people behind your events: one record per userId, with the properties identify gave them."
      />
      <ErrorMessage error={users.error} />
      <ErrorMessage error={counts.error && `Event counts could not be loaded: ${counts.error}`} />
      {users.loading && !data && <Loading />}
      {data && data.total === 0 && <NoUsers projectId={project.id} />}
      {data && data.total > 0 && data.users.length === 0 && (
        <Empty title="No users on this page">
          <p>
            <a href={`/projects/${project.id}/users`}>Back to the first page</a>
          </p>
        </Empty>
      )}
      {data && data.users.length > 0 && (
        <>
          <div class="table-wrap">
            <table class="users-table">
              <caption class="visually-hidden">Users</caption>
              <thead>
                <tr>
                  <th scope="col">User</th>
                  <th scope="col">Properties</th>
                  <th scope="col" class="num">
                    Events
                  </th>
                  <th scope="col">First seen</th>
                  <th scope="col">Last seen</th>
                </tr>
              </thead>
              <tbody>
                {data.users.map((u) => (
                  <tr key={u.id}>
                    <td>
                      <a href={`/projects/${project.id}/users/${encodeURIComponent(u.id)}`}>{u.externalId}</a>
                    </td>
                    <td>
                      <CompactProperties properties={u.properties} />
                    </td>
                    <td class="num" data-testid="event-count">
                      {counts.data?.list === data.users ? formatNumber(counts.data.counts.get(u.externalId) ?? 0) : "…"}
                    </td>
                    <td title={formatTime(u.firstSeenAt)}>{timeAgo(u.firstSeenAt)}</td>
                    <td title={formatTime(u.lastSeenAt)}>{timeAgo(u.lastSeenAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Pages of users">
            <span class="muted" role="status">
              {data.offset + 1}–{last} of {formatNumber(data.total)}
            </span>
            <Button
              disabled={page <= 1 || users.loading}
              onClick={() => setQuery({ page: page > 2 ? String(page - 1) : undefined }, true)}
            >
              Previous
            </Button>
            <Button
              disabled={last >= data.total || users.loading}
              onClick={() => setQuery({ page: String(page + 1) }, true)}
            >
              Next
            </Button>
          </nav>
        </>
      )}
    </>
  );
}

function NoUsers({ projectId }: { projectId: string }) {
  const example = curlPost("/v1/events", { type: "signup", userId: "user-1" });
  return (
    <Empty title="No users yet">
      <p>
        A user appears here as soon as an event carries a <code>userId</code>, or when you identify one:{" "}
        <code>identify()</code> in the SDKs, or <code>POST /v1/projects/{projectId}/identify</code> with an{" "}
        <code>externalId</code> and <code>properties</code>.
      </p>
      <pre class="users-example">{example}</pre>
      <p>
        Need a key? <a href={`/projects/${projectId}/keys`}>Create one under API keys</a>.
      </p>
    </Empty>
  );
}

export function UserDetail() {
  const { project, canAdmin } = useProject();
  const { params } = useRoute();
  const userId = params.userId;
  const user = useAsync(
    () => api.identity.getUser({ projectId: project.id, userId }).then((r) => r.data),
    [project.id, userId],
  );
  const u = user.data;
  // Once the deletion job has succeeded, what was shown is gone from the server: say so instead.
  const [deleted, setDeleted] = useState<Job | undefined>();
  if (u && deleted)
    return (
      <>
        <p class="back">
          <a href={`/projects/${project.id}/users`}>← Users</a>
        </p>
        <PageHeader title={u.externalId} subtitle={`User ${u.id}`} />
        <section class="card" role="status" data-testid="user-deleted">
          <h2>Deleted</h2>
          <p>
            This user and their {formatNumber(deleted.eventsDeleted)} events were deleted, with everything derived from
            them. <a href={`/projects/${project.id}/users`}>Back to users</a>
          </p>
        </section>
      </>
    );
  return (
    <>
      <p class="back">
        <a href={`/projects/${project.id}/users`}>← Users</a>
      </p>
      <ErrorMessage error={user.error} />
      {user.loading && !u && <Loading />}
      {u && (
        <>
          <PageHeader title={u.externalId} subtitle={`User ${u.id}`} />
          <div class="user-stats">
            <div class="card">
              <div class="muted">Events</div>
              <div class="stat" data-testid="user-event-count">
                {formatNumber(u.eventCount ?? 0n)}
              </div>
            </div>
            <div class="card">
              <div class="muted">First seen</div>
              <div class="stat-small">{formatTime(u.firstSeenAt)}</div>
            </div>
            <div class="card">
              <div class="muted">Last seen</div>
              <div class="stat-small">{formatTime(u.lastSeenAt)}</div>
            </div>
          </div>
          <Properties properties={u.properties} />
          <UserEvents key={u.id} externalId={u.externalId} />
          <UserData key={`data-${u.id}`} user={u} canAdmin={canAdmin} onDeleted={setDeleted} />
        </>
      )}
    </>
  );
}

function Properties({ properties }: { properties: JsonObject | undefined }) {
  const entries = Object.entries(properties ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return (
    <section class="user-section" aria-labelledby="props-title">
      <h2 id="props-title">Properties</h2>
      {entries.length === 0 ? (
        <p class="muted">
          No properties yet. <code>identify</code> (or a <code>$identify</code> event's <code>data</code>) merges them
          onto the user.
        </p>
      ) : (
        <div class="table-wrap">
          <table class="props-table">
            <caption class="visually-hidden">Properties</caption>
            <thead>
              <tr>
                <th scope="col">Property</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {entries.map(([k, v]) => (
                <tr key={k}>
                  <th scope="row">{k}</th>
                  <td>
                    {v !== null && typeof v === "object" ? (
                      <pre>{JSON.stringify(v, null, 2)}</pre>
                    ) : typeof v === "string" ? (
                      v
                    ) : (
                      <code>{JSON.stringify(v)}</code>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** The user's events, newest first, a page at a time (the event query's cursor). */
function UserEvents({ externalId }: { externalId: string }) {
  const { project } = useProject();
  const [pages, setPages] = useState<{ events: VigilEvent[]; next?: string }>();
  const more = useAction();
  const load = (cursor?: string) =>
    api.analytics
      .queryEvents({
        projectId: project.id,
        filters: filterToValue({ and: [{ field: "userId", operator: "equals", value: externalId }] }),
        pagination: { limit: BigInt(EVENTS_PAGE), cursor },
      })
      .then((r) => ({ events: r.data, next: r.pagination?.hasMore ? r.pagination.nextCursor : undefined }));
  const first = useAsync(async () => {
    const p = await load();
    setPages(p);
    return p;
  }, [project.id, externalId]);
  const events = pages?.events ?? [];
  return (
    <section class="user-section" aria-labelledby="events-title">
      <h2 id="events-title">Events</h2>
      <ErrorMessage error={first.error} />
      {first.loading && !pages && <Loading />}
      {pages && events.length === 0 && (
        <p class="muted">
          No events carry this user's id (<code>{externalId}</code>) yet.
        </p>
      )}
      {events.length > 0 && (
        <div class="table-wrap">
          <table class="user-events">
            <caption class="visually-hidden">Events of {externalId}</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Type</th>
                <th scope="col">Data</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.id}>
                  <td class="nowrap" title={e.timestamp}>
                    {formatTime(e.timestamp)}
                  </td>
                  <td>
                    <code>{e.type}</code>
                  </td>
                  <td>
                    <CompactProperties properties={e.data} show={4} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorMessage error={more.error} />
      {pages?.next && (
        <div class="pager">
          <Button
            busy={more.busy}
            onClick={async () => {
              const next = await more.run(() => load(pages.next));
              if (next) setPages({ events: [...pages.events, ...next.events], next: next.next });
            }}
          >
            Load older events
          </Button>
        </div>
      )}
    </section>
  );
}

/** Saves `parts` as a file the browser downloads (no server round trip: the data is here already). */
function download(name: string, type: string, parts: BlobPart[]) {
  const url = URL.createObjectURL(new Blob(parts, { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

/**
 * A person's data on request (decisions.md "Data lifecycle"): export the record and every event as
 * NDJSON (the file GET .../users/:userId/export streams: the record, then the events oldest first),
 * or delete them (owner or admin), which runs
 * as a job whose status is followed here until it ends.
 */
function UserData({ user, canAdmin, onDeleted }: { user: User; canAdmin: boolean; onDeleted: (job: Job) => void }) {
  const { project } = useProject();
  const exporting = useAction();
  const removing = useAction();
  const [job, setJob] = useState<Job | undefined>();
  const running = job !== undefined && (job.status === "pending" || job.status === "running");
  useInterval(
    () => {
      if (!job) return;
      api.jobs.getJob({ projectId: project.id, jobId: job.jobId }).then(
        (r) => {
          if (!r.data) return;
          setJob(r.data);
          if (r.data.status === "succeeded") onDeleted(r.data);
        },
        () => undefined, // the next tick tries again; a lasting failure shows as a job that does not move
      );
    },
    running ? 1000 : undefined,
  );
  return (
    <section class="card user-data" aria-labelledby="user-data-title">
      <h2 id="user-data-title">This person's data</h2>
      <div class="actions">
        <Button
          busy={exporting.busy}
          onClick={async () => {
            // The stream's chunks, as they come, become the file's parts.
            const parts = await exporting.run(async () => {
              const got: BlobPart[] = [];
              for await (const c of api.identity.exportUser({ projectId: project.id, userId: user.id }))
                got.push(new Uint8Array(c.data));
              return got;
            });
            if (parts) download(`user-${user.id}.ndjson`, "application/x-ndjson", parts);
          }}
        >
          Export as NDJSON
        </Button>
        {canAdmin && !job && (
          <ConfirmButton
            label="Delete user and events"
            busy={removing.busy}
            onConfirm={async () => {
              const r = await removing.run(() => api.identity.deleteUser({ projectId: project.id, userId: user.id }));
              if (r?.data) setJob(r.data);
            }}
          />
        )}
      </div>
      {!canAdmin && <p class="muted">Only the project's owner and admins can delete a user.</p>}
      {job && (
        <p role="status" data-testid="delete-job">
          Deleting: <StatusBadge status={job.status} />{" "}
          {job.status === "succeeded" ? (
            <>
              {formatNumber(job.eventsDeleted)} events removed.{" "}
              <a href={`/projects/${project.id}/users`}>Back to users</a>
            </>
          ) : job.status === "failed" ? (
            (job.error ?? "The job failed.")
          ) : (
            `${formatNumber(job.eventsDeleted)} events removed so far.`
          )}
        </p>
      )}
      <ErrorMessage error={exporting.error ?? removing.error} />
    </section>
  );
}
