import { useState } from "preact/hooks";
import type { Maintenance } from "../../../gen/vigil/v1/uptime_pb.js";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { formatDuration, formatTime, timeAgo } from "../ui/format.js";
import { useAction, useAsync, useInterval } from "../ui/hooks.js";
import {
  Button,
  ConfirmButton,
  Empty,
  ErrorMessage,
  Field,
  Loading,
  MonitorChecklist,
  PageHeader,
  StatusBadge,
} from "../ui/kit.js";
import { useQueryState } from "../ui/url-state.js";
import { cronInWords } from "./uptime-cron.js";

// The maintenance calendar of a project (issue #34 point 5, docs/uptime.md "Maintenance windows"):
// the windows in progress and upcoming first (soonest first), then the past ones; a form for a
// one-off or recurring window on chosen monitors; edit (PATCH; a window in progress its title and
// description only); delete. The open form is in the URL (?new=once or ?new=recurring; ?edit=<id>,
// with ?kind= when its kind is switched). Reached from the Uptime screen's tabs (UptimeTabs), not a sidebar section.

/** How often the calendar is re-read (a window starting or ending shows within this). */
const REFRESH_MS = 5_000;

/** The two views of the Uptime section, as links: the monitors and their maintenance windows. */
export function UptimeTabs({ current }: { current: "monitors" | "maintenance" }) {
  const { project } = useProject();
  const tabs = [
    ["monitors", "Monitors", `/projects/${project.id}/uptime`],
    ["maintenance", "Maintenance", `/projects/${project.id}/uptime/maintenance`],
  ] as const;
  return (
    <nav class="uptime-tabs" aria-label="Uptime views">
      {tabs.map(([key, label, href]) => (
        <a key={key} href={href} aria-current={key === current ? "page" : undefined}>
          {label}
        </a>
      ))}
    </nav>
  );
}

/** Which part of the calendar a window is in: in progress or upcoming first, then past. */
const isPast = (m: Maintenance) => m.status === "completed";

/** The soonest occurrence first; past windows the latest ended first. */
function calendarOrder(list: Maintenance[]): { current: Maintenance[]; past: Maintenance[] } {
  const at = (m: Maintenance) => Date.parse(m.nextStartsAt ?? m.startsAt ?? m.createdAt);
  const ended = (m: Maintenance) => Date.parse(m.endsAt ?? m.createdAt);
  return {
    current: list.filter((m) => !isPast(m)).sort((a, b) => at(a) - at(b)),
    past: list.filter(isPast).sort((a, b) => ended(b) - ended(a)),
  };
}

type Kind = "once" | "recurring";

export function MaintenanceCalendar() {
  const { project } = useProject();
  const [query, setQuery] = useQueryState();
  const creating: Kind | undefined = query.new === "once" || query.new === "recurring" ? query.new : undefined;
  const windows = useAsync(
    () => api.uptime.listMaintenances({ projectId: project.id }).then((r) => r.data),
    [project.id],
  );
  const monitors = useAsync(
    () => api.uptime.listMonitors({ projectId: project.id, limit: 1000 }).then((r) => r.data),
    [project.id],
  );
  useInterval(() => windows.reload(), REFRESH_MS);
  // The window being edited (?edit=<id>), in place of the create form.
  const editing = query.edit ? windows.data?.find((m) => m.id === query.edit) : undefined;
  const names = new Map((monitors.data ?? []).map((m) => [m.id, m.name]));
  const { current, past } = calendarOrder(windows.data ?? []);
  return (
    <>
      <PageHeader
        title="Uptime"
        subtitle="Maintenance windows: while one is in progress its monitors have no deadline, open no incident and show “maintenance” on status pages."
        actions={
          !creating &&
          !editing && (
            <Button variant="primary" onClick={() => setQuery({ new: "once" }, true)}>
              New maintenance window
            </Button>
          )
        }
      />
      <UptimeTabs current="maintenance" />
      {creating && !editing && monitors.data && (
        <MaintenanceForm
          kind={creating}
          setKind={(k) => setQuery({ new: k })}
          monitors={monitors.data.map((m) => ({ id: m.id, name: m.name }))}
          onDone={(created) => {
            setQuery({ new: undefined });
            if (created) windows.reload();
          }}
        />
      )}
      {editing && monitors.data && (
        <MaintenanceForm
          key={editing.id}
          editing={editing}
          kind={
            query.kind === "once" || query.kind === "recurring" ? query.kind : editing.schedule ? "recurring" : "once"
          }
          setKind={(k) => setQuery({ kind: k })}
          monitors={monitors.data.map((m) => ({ id: m.id, name: m.name }))}
          onDone={(saved) => {
            setQuery({ edit: undefined, kind: undefined });
            if (saved) windows.reload();
          }}
        />
      )}
      {(windows.error || monitors.error) && <ErrorMessage error={windows.error ?? monitors.error} />}
      {!windows.data ? (
        !windows.error && <Loading />
      ) : (
        <>
          {(
            [
              ["current", "In progress and upcoming", current, "No maintenance window is planned."],
              ["past", "Past", past, "None yet."],
            ] as const
          ).map(([key, title, list, none]) => (
            <section key={key} class="card" aria-labelledby={`maintenance-${key}`}>
              <h2 id={`maintenance-${key}`}>{title}</h2>
              {list.length === 0 ? (
                <p class="muted">{none}</p>
              ) : (
                <ul class="maintenance-list" aria-label={title}>
                  {list.map((m) => (
                    <MaintenanceItem
                      key={m.id}
                      window={m}
                      names={names}
                      onEdit={() => setQuery({ edit: m.id, new: undefined }, true)}
                      onDeleted={windows.reload}
                    />
                  ))}
                </ul>
              )}
            </section>
          ))}
        </>
      )}
      {windows.data && windows.data.length === 0 && !creating && (
        <Empty title="No maintenance windows">
          <p>Plan one before a deploy or a migration, so its monitors do not go down or page anyone.</p>
        </Empty>
      )}
    </>
  );
}

/** When a window runs, in words: its one-off times, or its schedule and the next occurrence. */
function When({ window: m }: { window: Maintenance }) {
  if (m.schedule)
    return (
      <>
        <strong>{cronInWords(m.schedule.cron)}</strong> ({m.schedule.timezone ?? "UTC"}) for{" "}
        {formatDuration(m.schedule.durationMs)}
        {m.nextStartsAt && (
          <span class="muted">
            {" "}
            · {m.status === "in_progress" ? "this one" : "next"}{" "}
            <time dateTime={m.nextStartsAt}>{formatTime(m.nextStartsAt)}</time> to {formatTime(m.nextEndsAt)}
          </span>
        )}
      </>
    );
  return (
    <>
      <time dateTime={m.startsAt}>{formatTime(m.startsAt)}</time> to{" "}
      <time dateTime={m.endsAt}>{formatTime(m.endsAt)}</time>
      {m.status !== "completed" && m.startsAt && (
        <span class="muted">
          {" "}
          · {m.status === "in_progress" ? `ends ${timeAgo(m.endsAt)}` : `starts ${timeAgo(m.startsAt)}`}
        </span>
      )}
    </>
  );
}

function MaintenanceItem(props: {
  window: Maintenance;
  names: Map<string, string>;
  onEdit: () => void;
  onDeleted: () => void;
}) {
  const { project } = useProject();
  const m = props.window;
  const remove = useAction();
  return (
    <li class="maintenance" aria-labelledby={`maintenance-${m.id}`}>
      <div class="card-head">
        <h3 id={`maintenance-${m.id}`}>{m.title}</h3>
        <StatusBadge status={m.status === "in_progress" ? "in progress" : m.status} />
        {m.status !== "completed" && (
          <Button variant="link" onClick={props.onEdit} aria-label={`Edit ${m.title}`}>
            Edit
          </Button>
        )}
        <ConfirmButton
          label="Delete"
          confirmLabel={`Yes, delete ${m.title}`}
          busy={remove.busy}
          onConfirm={async () => {
            const r = await remove.run(() =>
              api.uptime.deleteMaintenance({ projectId: project.id, maintenanceId: m.id }),
            );
            if (r) props.onDeleted();
          }}
        />
      </div>
      <p class="maintenance-when">
        <When window={m} />
      </p>
      <p class="muted small">
        {m.monitorIds.map((id) => props.names.get(id) ?? id).join(", ")}
        {m.description && <> · {m.description}</>}
      </p>
      <ErrorMessage error={remove.error} />
    </li>
  );
}

/** A datetime-local value as RFC 3339 (the reader's zone); as typed when it is no time (the server names it). */
function isoOf(local: string): string | undefined {
  if (local.trim() === "") return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? local : d.toISOString();
}

/** Minutes as typed to int64 milliseconds; -1 (refused, naming the field) when not a number. */
function minutesMs(text: string): bigint {
  const v = Number(text.trim()) * 60_000;
  return Number.isFinite(v) && v >= 0 && v < 2 ** 53 ? BigInt(Math.round(v)) : -1n;
}

/** An RFC 3339 time as a datetime-local value in the reader's zone ("" for none). */
function localOf(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/**
 * A new window, or `editing` one (PATCH): a window in progress takes a new title and description
 * only (its times and monitors change once it ends: the server's 409), so those controls are locked.
 */
function MaintenanceForm(props: {
  kind: Kind;
  setKind: (k: Kind) => void;
  monitors: { id: string; name: string }[];
  editing?: Maintenance;
  onDone: (saved: boolean) => void;
}) {
  const { project } = useProject();
  const w = props.editing;
  const [title, setTitle] = useState(w?.title ?? "");
  const [description, setDescription] = useState(w?.description ?? "");
  const [chosen, setChosen] = useState<string[]>(w?.monitorIds ?? []);
  const [startsAt, setStartsAt] = useState(localOf(w?.startsAt));
  const [endsAt, setEndsAt] = useState(localOf(w?.endsAt));
  const [cron, setCron] = useState(w?.schedule?.cron ?? "");
  const [zone, setZone] = useState(
    () => w?.schedule?.timezone || Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC",
  );
  const [minutes, setMinutes] = useState(w?.schedule ? String(Number(w.schedule.durationMs) / 60_000) : "60");
  const create = useAction();
  const locked = w?.status === "in_progress";
  const heading = w ? "Edit maintenance window" : "New maintenance window";
  const headingId = w ? "edit-maintenance" : "new-maintenance";
  const times = () =>
    props.kind === "once"
      ? { startsAt: isoOf(startsAt), endsAt: isoOf(endsAt) }
      : { schedule: { cron: cron.trim(), timezone: zone.trim() || "UTC", durationMs: minutesMs(minutes) } };
  return (
    <section class="card" aria-labelledby={headingId}>
      <h2 id={headingId}>{heading}</h2>
      {locked && <p class="muted">In progress: its times and monitors can change once it ends (or delete it).</p>}
      <form
        aria-labelledby={headingId}
        onSubmit={async (e) => {
          e.preventDefault();
          const r = await create.run<unknown>(() =>
            w
              ? api.uptime.updateMaintenance({
                  projectId: project.id,
                  maintenanceId: w.id,
                  title,
                  description,
                  ...(locked ? {} : { monitorIds: chosen, ...times() }),
                })
              : api.uptime.createMaintenance({
                  projectId: project.id,
                  title,
                  description: description || undefined,
                  monitorIds: chosen,
                  ...times(),
                }),
          );
          if (r) props.onDone(true);
        }}
      >
        <Field label="Title" value={title} onValue={setTitle} field="title" error={create.error} required />
        <Field
          label="Description"
          value={description}
          onValue={setDescription}
          field="description"
          error={create.error}
          hint="Optional; shown on the status pages"
        />
        <MonitorChecklist
          disabled={locked}
          legend="Monitors"
          monitors={props.monitors}
          chosen={chosen}
          onChosen={setChosen}
          error={create.error}
          empty="This project has no monitors yet."
        />
        <fieldset disabled={locked}>
          <legend>When</legend>
          {(["once", "recurring"] as const).map((k) => (
            <label key={k} class="check">
              <input
                type="radio"
                name={`${headingId}-kind`}
                checked={props.kind === k}
                onChange={() => props.setKind(k)}
              />{" "}
              {k === "once" ? "One-off" : "Recurring"}
            </label>
          ))}
          {props.kind === "once" ? (
            <>
              <Field
                label="Starts"
                type="datetime-local"
                value={startsAt}
                onValue={setStartsAt}
                field="startsAt"
                error={create.error}
              />
              <Field
                label="Ends"
                type="datetime-local"
                value={endsAt}
                onValue={setEndsAt}
                field="endsAt"
                error={create.error}
                hint="At most 7 days after the start"
              />
            </>
          ) : (
            <>
              <Field
                label="Schedule (cron)"
                placeholder="0 3 * * 0"
                value={cron}
                onValue={setCron}
                field="schedule.cron"
                error={create.error}
                hint={cron.trim() ? cronInWords(cron.trim()) : "When each window starts"}
              />
              <Field
                label="Time zone"
                value={zone}
                onValue={setZone}
                field="schedule.timezone"
                error={create.error}
                hint="IANA name"
              />
              <Field
                label="Duration (minutes)"
                inputMode="decimal"
                value={minutes}
                onValue={setMinutes}
                field="schedule.durationMs"
                error={create.error}
              />
            </>
          )}
        </fieldset>
        <div class="actions">
          <Button variant="primary" type="submit" busy={create.busy}>
            {w ? "Save window" : "Create window"}
          </Button>
          <Button onClick={() => props.onDone(false)}>Cancel</Button>
        </div>
      </form>
      <ErrorMessage error={create.error} />
    </section>
  );
}
