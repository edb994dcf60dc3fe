import { useId, useState } from "preact/hooks";
import { fromJson } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import type { Monitor } from "../../../gen/vigil/v1/uptime_pb.js";
import type { Page } from "../../../gen/vigil/v1/pages_pb.js";
import { api, fieldErrors } from "../api.js";
import { useProject } from "../session.js";
import { useAction, useAsync } from "../ui/hooks.js";
import { Button, ConfirmButton, Empty, ErrorMessage, Field, Loading, PageHeader, StatusBadge } from "../ui/kit.js";
import { formatTime } from "../ui/format.js";
import { IncidentComposer, PageSubscribers } from "./pages-communication.js";
import "./pages.css";

// Status pages (docs/pages.md): public pages at /status/<slug> listing some of the project's
// monitors in a chosen order, under chosen names and sections. Owners and admins create, edit,
// publish and delete them; members see the list.

/** What a page lists, as the form edits it (the request's PageMonitor, with empty text for none). */
interface Entry {
  monitorId: string;
  name: string;
  section: string;
}

/** A slug made from a title: lowercase letters, digits and `-` (docs/pages.md), 3-64 characters. */
function slugOf(title: string): string {
  return title
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}

export function StatusPages() {
  const { project, canAdmin } = useProject();
  const pages = useAsync(() => api.pages.listPages({ projectId: project.id }).then((r) => r.data), [project.id]);
  const monitors = useAsync(
    () => api.uptime.listMonitors({ projectId: project.id, limit: 1000 }).then((r) => r.data),
    [project.id],
  );
  // "new", a page id being edited, or nothing.
  const [editing, setEditing] = useState<string>();
  const list = pages.data;
  const mons = monitors.data;
  const noMonitors = mons !== undefined && mons.length === 0;
  const form = (page?: Page) =>
    mons && (
      <PageForm
        key={page?.id ?? "new"}
        projectId={project.id}
        page={page}
        monitors={mons}
        onDone={() => {
          setEditing(undefined);
          pages.reload();
        }}
        onCancel={() => setEditing(undefined)}
      />
    );
  return (
    <>
      <PageHeader
        title="Status pages"
        subtitle={
          <>
            Public pages at <code>/status/&lt;slug&gt;</code> showing your monitors' status, uptime and incidents.
          </>
        }
        actions={
          canAdmin &&
          !editing &&
          !noMonitors && (
            <Button variant="primary" onClick={() => setEditing("new")}>
              New status page
            </Button>
          )
        }
      />
      <ErrorMessage error={pages.error ?? monitors.error} />
      {editing === "new" && form()}
      {!list || !mons ? (
        (pages.loading || monitors.loading) && <Loading />
      ) : list.length === 0 ? (
        editing !== "new" &&
        (noMonitors ? (
          <Empty title="No monitors yet">
            <p class="muted">
              A status page shows monitors, and this project has none. A monitor is created by its first heartbeat:{" "}
              <code>POST /v1/projects/{project.id}/heartbeats/&lt;monitor-slug&gt;</code> with an API key.
            </p>
            <p>
              <a href={`/projects/${project.id}/uptime`}>Go to Uptime</a> to see your monitors.
            </p>
          </Empty>
        ) : (
          <Empty title="No status pages yet">
            <p class="muted">
              Publish a page that tells your users whether your services are up, with the monitors you choose.
            </p>
            {canAdmin ? (
              <Button variant="primary" onClick={() => setEditing("new")}>
                Create a status page
              </Button>
            ) : (
              <p class="muted">The project's owner and admins can create one.</p>
            )}
          </Empty>
        ))
      ) : (
        <ul class="status-pages">
          {list.map((pg) =>
            editing === pg.id ? (
              <li key={pg.id}>{form(pg)}</li>
            ) : (
              <PageItem
                key={pg.id}
                projectId={project.id}
                page={pg}
                monitors={mons}
                canAdmin={canAdmin}
                onEdit={editing ? undefined : () => setEditing(pg.id)}
                onChanged={pages.reload}
              />
            ),
          )}
        </ul>
      )}
      {noMonitors && list && list.length > 0 && (
        <p class="muted">
          This project has no monitors any more: <a href={`/projects/${project.id}/uptime`}>Uptime</a> tells how to
          create one.
        </p>
      )}
    </>
  );
}

function PageItem(props: {
  projectId: string;
  page: Page;
  monitors: Monitor[];
  canAdmin: boolean;
  onEdit?: () => void;
  onChanged: () => void;
}) {
  const { page } = props;
  const act = useAction();
  const byId = new Map(props.monitors.map((m) => [m.id, m]));
  const href = `/status/${page.slug}`;
  return (
    <li class="card status-page" aria-label={page.title}>
      <div class="status-page-head">
        <div>
          <h2>
            {page.title} <StatusBadge status={page.published ? "published" : "draft"} />
          </h2>
          {page.description && <p class="muted description">{page.description}</p>}
          <p class="address">
            <a href={href} target="_blank" rel="noopener noreferrer">
              {location.origin}
              {href}
              <span class="visually-hidden"> (opens in a new tab)</span> ↗
            </a>
            {!page.published && <span class="muted"> — not public until published</span>}
          </p>
        </div>
        {props.canAdmin && (
          <div class="actions">
            <Button
              busy={act.busy}
              onClick={() =>
                act
                  .run(() =>
                    api.pages.updatePage({ projectId: props.projectId, pageId: page.id, published: !page.published }),
                  )
                  .then((r) => r && props.onChanged())
              }
            >
              {page.published ? "Unpublish" : "Publish"}
            </Button>
            {props.onEdit && <Button onClick={props.onEdit}>Edit</Button>}
            <ConfirmButton
              label="Delete"
              confirmLabel="Yes, delete the page"
              busy={act.busy}
              onConfirm={() =>
                act
                  .run(() => api.pages.deletePage({ projectId: props.projectId, pageId: page.id }))
                  .then((r) => r && props.onChanged())
              }
            />
          </div>
        )}
      </div>
      <ErrorMessage error={act.error} />
      {page.monitors.length === 0 ? (
        <p class="muted">No monitors on this page yet.</p>
      ) : (
        <PageMonitorList
          entries={page.monitors.map((m) => ({ monitorId: m.monitorId, name: m.name ?? "", section: m.section ?? "" }))}
          byId={byId}
        />
      )}
      <p class="muted small">Updated {formatTime(page.updatedAt)}</p>
      {props.canAdmin && <IncidentComposer projectId={props.projectId} page={page} monitors={props.monitors} />}
      {props.canAdmin && <PageSubscribers projectId={props.projectId} page={page} />}
    </li>
  );
}

/** A page's monitors as the public page groups them: consecutive ones of a section under it. */
function PageMonitorList({ entries, byId }: { entries: Entry[]; byId: Map<string, Monitor> }) {
  const groups: { section: string; items: Entry[] }[] = [];
  for (const e of entries) {
    const last = groups.at(-1);
    if (last && last.section === e.section) last.items.push(e);
    else groups.push({ section: e.section, items: [e] });
  }
  return (
    <div class="page-monitors">
      {groups.map((g, i) => (
        <div key={i} class="page-section">
          {g.section && <h3>{g.section}</h3>}
          <ul>
            {g.items.map((e) => {
              const m = byId.get(e.monitorId);
              return (
                <li key={e.monitorId}>
                  <StatusBadge status={m?.status ?? "unknown"} /> {e.name || m?.name || e.monitorId}
                  {e.name && m && e.name !== m.name && <span class="muted"> ({m.name})</span>}
                </li>
              );
            })}
          </ul>
        </div>
      ))}
    </div>
  );
}

/** Create (no `page`) or edit a page: its texts, publication, and monitors in display order. */
function PageForm(props: {
  projectId: string;
  page?: Page;
  monitors: Monitor[];
  onDone: () => void;
  onCancel: () => void;
}) {
  const { page } = props;
  const [title, setTitle] = useState(page?.title ?? "");
  const [slug, setSlug] = useState(page?.slug ?? "");
  const [slugTouched, setSlugTouched] = useState(Boolean(page));
  const [description, setDescription] = useState(page?.description ?? "");
  const [published, setPublished] = useState(page?.published ?? false);
  const [entries, setEntries] = useState<Entry[]>(
    page?.monitors.map((m) => ({ monitorId: m.monitorId, name: m.name ?? "", section: m.section ?? "" })) ?? [],
  );
  const [adding, setAdding] = useState("");
  const act = useAction();
  const descId = useId();
  const addId = useId();
  const byId = new Map(props.monitors.map((m) => [m.id, m]));
  const available = props.monitors.filter((m) => !entries.some((e) => e.monitorId === m.id));
  const toAdd = available.some((m) => m.id === adding) ? adding : (available[0]?.id ?? "");
  const errs = fieldErrors(act.error);
  const shownByFields = ["slug", "title", "description"].some((f) => errs[f]);

  const move = (i: number, by: number) =>
    setEntries((es) => {
      const j = i + by;
      if (j < 0 || j >= es.length) return es;
      const next = [...es];
      [next[i], next[j]] = [next[j], next[i]];
      return next;
    });
  const change = (i: number, patch: Partial<Entry>) =>
    setEntries((es) => es.map((e, k) => (k === i ? { ...e, ...patch } : e)));

  const save = async () => {
    const monitors = entries.map((e) => ({
      monitorId: e.monitorId,
      ...(e.name.trim() ? { name: e.name.trim() } : {}),
      ...(e.section.trim() ? { section: e.section.trim() } : {}),
    }));
    const r = await act.run<unknown>(() =>
      page
        ? api.pages.updatePage({
            projectId: props.projectId,
            pageId: page.id,
            slug,
            title,
            description: fromJson(ValueSchema, description.trim() ? description : null),
            published,
            monitors: fromJson(ListValueSchema, monitors),
          })
        : api.pages.createPage({
            projectId: props.projectId,
            slug,
            title,
            description: description.trim() ? description : undefined,
            published,
            monitors,
          }),
    );
    if (r) props.onDone();
  };

  return (
    <form
      class="card page-form"
      aria-label={page ? `Edit ${page.title}` : "New status page"}
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h2>{page ? `Edit “${page.title}”` : "New status page"}</h2>
      <div class="grid-2">
        <Field
          label="Title"
          value={title}
          required
          maxLength={200}
          field="title"
          error={act.error}
          onValue={(v) => {
            setTitle(v);
            if (!slugTouched) setSlug(slugOf(v));
          }}
        />
        <Field
          label="Slug"
          value={slug}
          required
          maxLength={64}
          field="slug"
          error={act.error}
          hint={
            <>
              The public address: <code>/status/{slug || "…"}</code> (lowercase letters, digits and -).
            </>
          }
          onValue={(v) => {
            setSlug(v);
            setSlugTouched(true);
          }}
        />
      </div>
      <div class="field">
        <label for={descId}>Description</label>
        <textarea
          id={descId}
          rows={2}
          maxLength={2000}
          value={description}
          aria-invalid={errs.description ? true : undefined}
          aria-describedby={errs.description ? `${descId}-note` : undefined}
          onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)}
        />
        {errs.description && (
          <small id={`${descId}-note`} class="field-error">
            {errs.description}
          </small>
        )}
      </div>

      <fieldset class="page-monitors-edit">
        <legend>Monitors, in display order</legend>
        {entries.length === 0 ? (
          <p class="muted">No monitors chosen yet: add them below.</p>
        ) : (
          <ol>
            {entries.map((e, i) => {
              const m = byId.get(e.monitorId);
              const label = m?.name ?? e.monitorId;
              return (
                <li key={e.monitorId} class="entry" aria-label={label}>
                  <div class="entry-name">
                    <span class="position">{i + 1}.</span> <StatusBadge status={m?.status ?? "unknown"} />{" "}
                    <strong>{label}</strong>
                    {m && m.slug !== m.name && <code class="muted"> {m.slug}</code>}
                  </div>
                  <Field
                    label="Display name"
                    value={e.name}
                    placeholder={m?.name ?? ""}
                    maxLength={100}
                    onValue={(v) => change(i, { name: v })}
                  />
                  <Field
                    label="Section"
                    value={e.section}
                    placeholder="None"
                    maxLength={100}
                    list="page-sections"
                    onValue={(v) => change(i, { section: v })}
                  />
                  <div class="entry-actions">
                    <Button aria-label={`Move ${label} up`} disabled={i === 0} onClick={() => move(i, -1)}>
                      ↑
                    </Button>
                    <Button
                      aria-label={`Move ${label} down`}
                      disabled={i === entries.length - 1}
                      onClick={() => move(i, 1)}
                    >
                      ↓
                    </Button>
                    <Button
                      aria-label={`Remove ${label}`}
                      onClick={() => setEntries((es) => es.filter((x) => x.monitorId !== e.monitorId))}
                    >
                      Remove
                    </Button>
                  </div>
                </li>
              );
            })}
          </ol>
        )}
        <datalist id="page-sections">
          {[...new Set(entries.map((e) => e.section.trim()).filter(Boolean))].map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
        {available.length > 0 ? (
          <div class="form-inline add-monitor">
            <div class="field">
              <label for={addId}>Add a monitor</label>
              <select id={addId} value={toAdd} onChange={(e) => setAdding((e.target as HTMLSelectElement).value)}>
                {available.map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.name} ({m.status})
                  </option>
                ))}
              </select>
            </div>
            <Button
              disabled={!toAdd}
              onClick={() => {
                if (toAdd) setEntries((es) => [...es, { monitorId: toAdd, name: "", section: "" }]);
                setAdding("");
              }}
            >
              Add
            </Button>
          </div>
        ) : (
          <p class="muted">Every monitor of the project is on this page.</p>
        )}
      </fieldset>

      <label class="check">
        <input
          type="checkbox"
          checked={published}
          onChange={(e) => setPublished((e.target as HTMLInputElement).checked)}
        />{" "}
        Published (anyone with the address can see it)
      </label>
      {!shownByFields && <ErrorMessage error={act.error} />}
      <div class="actions">
        <Button type="submit" variant="primary" busy={act.busy}>
          {page ? "Save page" : "Create page"}
        </Button>
        <Button onClick={props.onCancel}>Cancel</Button>
      </div>
    </form>
  );
}
