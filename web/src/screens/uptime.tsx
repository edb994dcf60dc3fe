import type { ComponentChildren } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import { useLocation, useRoute } from "preact-iso";
import type { Heartbeat, Incident, Monitor } from "../../../gen/vigil/v1/uptime_pb.js";
import { api, fieldErrors } from "../api.js";
import { useProject } from "../session.js";
import { TimeChart } from "../ui/chart.js";
import { curlPost } from "../ui/curl.js";
import { formatDuration, formatNumber, formatPercent, formatTime, timeAgo } from "../ui/format.js";
import { useAction, useAsync, useInterval } from "../ui/hooks.js";
import {
  Button,
  ConfirmButton,
  Empty,
  ErrorMessage,
  Field,
  Loading,
  PageHeader,
  Select,
  StatusBadge,
} from "../ui/kit.js";
import { DayBars, Sparkline24h } from "../ui/uptime-charts.js";
import { CronSchedule, cronInWords, PingUrl, Runs } from "./uptime-cron.js";
import { UptimeTabs } from "./uptime-maintenance.js";
import "./uptime.css";

// Uptime: the project's heartbeat monitors (status, last heartbeat, 24-hour sparkline, 90-day
// bars; pause, resume, delete and create for owners and admins) and a monitor's page (settings,
// stats, latency, the incident timeline with its updates, the heartbeats). Both screens poll:
// a monitor that misses its deadline turns red and its incident appears without a reload.

/** How often the screens re-read the monitors (a missed deadline shows within this). */
const REFRESH_MS = 2_000;
/** How often each monitor's pictures (history, heartbeats) are re-read when nothing else changed. */
const PICTURE_MS = 30_000;

const HOUR_MS = 3_600_000;
const INT64_MAX = 2n ** 63n - 1n;

/** Seconds (as typed, decimals allowed) to the int64 milliseconds of the API; undefined when blank. */
function msOf(seconds: string): bigint | undefined {
  const t = seconds.trim();
  if (t === "") return undefined;
  const v = Number(t) * 1000;
  // Not a number (NaN does not encode) or past int64: a value the server refuses, naming the field.
  if (!Number.isFinite(v)) return -1n;
  return v >= 2 ** 63 ? INT64_MAX : BigInt(Math.round(v));
}
const secondsOf = (ms: bigint) => String(Number(ms) / 1000);

/** A whole number as typed; undefined when blank, -1 (refused by the server, naming the field) when not whole. */
function countOf(text: string): number | undefined {
  const t = text.trim();
  if (t === "") return undefined;
  const v = Number(t);
  return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? v : -1;
}

/** The schedule fields of the forms: a cron expression (blank: an interval monitor) and its IANA zone. */
function scheduleOf(cron: string, timezone: string): { cron: string; timezone: string } | undefined {
  return cron.trim() === "" ? undefined : { cron: cron.trim(), timezone: timezone.trim() || "UTC" };
}

/** The reader's own IANA zone, the form's default for a new schedule. */
const localZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

/** The cron form fields, shared by the create form and the settings (hints: the schedule in words). */
function CronFields(props: {
  cron: string;
  setCron: (v: string) => void;
  zone: string;
  setZone: (v: string) => void;
  maxRuntime: string;
  setMaxRuntime: (v: string) => void;
  tolerance: string;
  setTolerance: (v: string) => void;
  error: unknown;
  disabled?: boolean;
}) {
  return (
    <>
      <Field
        label="Schedule (cron)"
        name="cron"
        placeholder="0 3 * * *"
        value={props.cron}
        onValue={props.setCron}
        field="schedule.cron"
        error={props.error}
        disabled={props.disabled}
        hint={props.cron.trim() ? cronInWords(props.cron.trim()) : "Optional: instead of the interval"}
      />
      <Field
        label="Time zone"
        name="timezone"
        placeholder="Europe/Berlin"
        value={props.zone}
        onValue={props.setZone}
        field="schedule.timezone"
        error={props.error}
        disabled={props.disabled}
        hint="IANA name, for the schedule"
      />
      <Field
        label="Max runtime (seconds)"
        name="maxRuntime"
        inputMode="decimal"
        value={props.maxRuntime}
        onValue={props.setMaxRuntime}
        field="maxRuntimeMs"
        error={props.error}
        disabled={props.disabled}
        hint="Optional: a run still running after it fails"
      />
      <Field
        label="Failure tolerance"
        name="failureTolerance"
        inputMode="numeric"
        value={props.tolerance}
        onValue={props.setTolerance}
        field="failureTolerance"
        error={props.error}
        disabled={props.disabled}
        hint="Failed runs in a row before it goes down"
      />
    </>
  );
}

/** The `curl` that sends a heartbeat (and creates the monitor on the first one). */
function heartbeatCurl(projectId: string, slug: string, intervalMs?: number) {
  return curlPost(
    `/v1/projects/${projectId}/heartbeats/${slug}`,
    intervalMs ? { expectedIntervalMs: intervalMs } : undefined,
  );
}

// ---------------------------------------------------------------------------------------------
// The monitor list

export function Uptime() {
  const { project, canAdmin } = useProject();
  const [creating, setCreating] = useState(false);
  const monitors = useAsync(async () => {
    const out: Monitor[] = [];
    let cursor: string | undefined;
    // Every monitor (pages of 1,000, oldest first); a project rarely has more than one page.
    do {
      const r = await api.uptime.listMonitors({ projectId: project.id, limit: 1000, cursor });
      out.push(...r.data);
      cursor = r.pagination?.hasMore ? r.pagination.nextCursor : undefined;
    } while (cursor);
    return out;
  }, [project.id]);
  const overview = useAsync(
    () => api.uptime.getMonitorsOverview({ projectId: project.id }).then((r) => r.data),
    [project.id],
  );
  const [slot, setSlot] = useState(() => Math.floor(Date.now() / PICTURE_MS));
  useInterval(() => {
    monitors.reload();
    overview.reload();
    setSlot(Math.floor(Date.now() / PICTURE_MS));
  }, REFRESH_MS);
  const up24 = new Map((overview.data ?? []).map((o) => [o.id, o.uptimePercentage24h]));
  const list = monitors.data;
  const counts = list
    ? ["up", "down", "unknown", "paused"].map((s) => [s, list.filter((m) => m.status === s).length] as const)
    : [];

  return (
    <>
      <PageHeader
        title="Uptime"
        subtitle={
          list && list.length > 0
            ? counts
                .filter(([, n]) => n > 0)
                .map(([s, n]) => `${n} ${s}`)
                .join(" · ")
            : "Heartbeat monitors: a monitor goes down when no heartbeat arrives within its interval and grace period."
        }
        actions={
          canAdmin &&
          list &&
          list.length > 0 &&
          !creating && (
            <Button variant="primary" onClick={() => setCreating(true)}>
              New monitor
            </Button>
          )
        }
      />
      <UptimeTabs current="monitors" />
      {creating && (
        <CreateMonitor
          onDone={(created) => {
            setCreating(false);
            if (created) monitors.reload();
          }}
        />
      )}
      {monitors.error && <ErrorMessage error={monitors.error} />}
      {!list ? (
        !monitors.error && <Loading />
      ) : list.length === 0 ? (
        <Empty title="No monitors yet">
          <p>
            Send a heartbeat from your job or service: the monitor appears on its first heartbeat, and goes{" "}
            <strong>down</strong> when the next one is late.
          </p>
          <pre class="curl" data-testid="heartbeat-curl">
            {heartbeatCurl(project.id, "nightly-backup", 86_400_000)}
          </pre>
          <p class="muted">
            Use a secret key from <a href={`/projects/${project.id}/keys`}>API keys</a> as <code>$VIGIL_KEY</code>;{" "}
            <code>expectedIntervalMs</code> is how often it should arrive.
          </p>
          {canAdmin && !creating && (
            <p>
              Or{" "}
              <Button variant="link" onClick={() => setCreating(true)}>
                create a monitor here
              </Button>{" "}
              and send its heartbeats later.
            </p>
          )}
        </Empty>
      ) : (
        <ul class="monitor-list" aria-label="Monitors">
          {list.map((m) => (
            <MonitorCard
              key={m.id}
              monitor={m}
              uptime24h={up24.get(m.id)}
              slot={slot}
              canAdmin={canAdmin}
              onChanged={monitors.reload}
            />
          ))}
        </ul>
      )}
    </>
  );
}

function CreateMonitor({ onDone }: { onDone: (created: boolean) => void }) {
  const { project } = useProject();
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [interval, setIntervalText] = useState("60");
  const [grace, setGrace] = useState("30");
  const [cron, setCron] = useState("");
  const [zone, setZone] = useState(localZone);
  const [maxRuntime, setMaxRuntime] = useState("");
  const [tolerance, setTolerance] = useState("0");
  const [created, setCreated] = useState<Monitor>();
  const create = useAction();
  if (created)
    return (
      <section class="card" aria-labelledby="created-title">
        <h2 id="created-title">Monitor “{created.name}” created</h2>
        <p>
          It stays <strong>unknown</strong> until its first heartbeat. Send one{" "}
          {created.schedule
            ? `at each run (${cronInWords(created.schedule.cron)}, ${created.schedule.timezone ?? "UTC"})`
            : `every ${formatDuration(created.expectedIntervalMs)}`}
          :
        </p>
        <pre class="curl">{heartbeatCurl(project.id, created.slug)}</pre>
        <Button variant="primary" onClick={() => onDone(true)}>
          Done
        </Button>
      </section>
    );
  return (
    <section class="card" aria-labelledby="create-title">
      <h2 id="create-title">New monitor</h2>
      <form
        class="form-inline"
        onSubmit={async (e) => {
          e.preventDefault();
          const r = await create.run(() =>
            api.uptime.createMonitor({
              projectId: project.id,
              name: name.trim() || undefined,
              slug: slug.trim() || undefined,
              // A schedule or an interval, never both (the server refuses both).
              schedule: scheduleOf(cron, zone),
              expectedIntervalMs: scheduleOf(cron, zone) ? undefined : msOf(interval),
              gracePeriodMs: msOf(grace),
              maxRuntimeMs: msOf(maxRuntime),
              failureTolerance: countOf(tolerance),
            }),
          );
          if (r?.data) setCreated(r.data);
        }}
      >
        <Field label="Name" name="name" value={name} onValue={setName} field="name" error={create.error} required />
        <Field
          label="Slug"
          name="slug"
          value={slug}
          onValue={setSlug}
          field="slug"
          error={create.error}
          hint="Optional; made from the name"
        />
        <Field
          label="Expected interval (seconds)"
          name="interval"
          inputMode="decimal"
          value={interval}
          onValue={setIntervalText}
          field="expectedIntervalMs"
          error={create.error}
        />
        <Field
          label="Grace period (seconds)"
          name="grace"
          inputMode="decimal"
          value={grace}
          onValue={setGrace}
          field="gracePeriodMs"
          error={create.error}
        />
        <CronFields
          cron={cron}
          setCron={setCron}
          zone={zone}
          setZone={setZone}
          maxRuntime={maxRuntime}
          setMaxRuntime={setMaxRuntime}
          tolerance={tolerance}
          setTolerance={setTolerance}
          error={create.error}
        />
        <Button variant="primary" type="submit" busy={create.busy}>
          Create monitor
        </Button>
        <Button onClick={() => onDone(false)}>Cancel</Button>
      </form>
      <ErrorMessage error={create.error} />
    </section>
  );
}

/** A monitor's last 24 hours (hourly history and its heartbeats' latencies) and 90 days. */
function usePictures(m: Monitor, slot: number) {
  const { project } = useProject();
  return useAsync(async () => {
    const q = { projectId: project.id, monitorId: m.id };
    const [day, days, beats] = await Promise.all([
      api.uptime.getMonitorHistory({ ...q, window: "24h" }),
      api.uptime.getMonitorHistory({ ...q, window: "90d" }),
      api.uptime.listHeartbeats({ ...q, from: new Date(Date.now() - 24 * HOUR_MS).toISOString(), limit: 1000 }),
    ]);
    return { hours: day.data?.buckets ?? [], days: days.data?.buckets ?? [], heartbeats: beats.data };
    // Re-read when the status changes (today's bar turns red at once) and every PICTURE_MS.
  }, [project.id, m.id, m.status, slot]);
}

function MonitorCard(props: {
  monitor: Monitor;
  uptime24h: number | undefined;
  slot: number;
  canAdmin: boolean;
  onChanged: () => void;
}) {
  const { project } = useProject();
  const m = props.monitor;
  const pictures = usePictures(m, props.slot);
  const href = `/projects/${project.id}/uptime/${m.id}`;
  return (
    <li class={`card monitor monitor-${m.status}`}>
      <div class="monitor-head">
        <div class="monitor-title">
          <h2>
            <a href={href}>{m.name}</a>
          </h2>
          <StatusBadge status={m.status} />
          <code class="muted">{m.slug}</code>
        </div>
        {props.canAdmin && (
          <MonitorActions monitor={m} onChanged={props.onChanged} onDeleted={props.onChanged} compact />
        )}
      </div>
      <dl class="monitor-facts">
        <Fact term="Last heartbeat">
          <span title={formatTime(m.lastHeartbeatAt)}>{timeAgo(m.lastHeartbeatAt)}</span>
        </Fact>
        <Fact term={m.schedule ? "Scheduled" : "Expected every"}>
          {m.schedule ? cronInWords(m.schedule.cron) : formatDuration(m.expectedIntervalMs)}
          {m.gracePeriodMs > 0n && <span class="muted"> + {formatDuration(m.gracePeriodMs)} grace</span>}
        </Fact>
        <Fact term={m.status === "up" ? "Up for" : "Deadline"}>
          {m.status === "up"
            ? formatDuration(m.timeUp)
            : m.deadlineAt
              ? timeAgo(m.deadlineAt)
              : m.status === "down"
                ? "passed: waiting for a heartbeat"
                : m.status === "paused"
                  ? "none while paused"
                  : "after the first heartbeat"}
        </Fact>
        <Fact term="Uptime 24 h">{formatPercent(props.uptime24h)}</Fact>
      </dl>
      <div class="monitor-pictures">
        <div class="picture-24h">
          <div class="picture-title muted">Last 24 hours</div>
          {pictures.data ? (
            <Sparkline24h buckets={pictures.data.hours} heartbeats={pictures.data.heartbeats} name={m.name} />
          ) : (
            <div class="sparkline-placeholder" />
          )}
        </div>
        <div class="picture-90d">
          <div class="picture-title muted">Last 90 days</div>
          {pictures.data ? <DayBars buckets={pictures.data.days} name={m.name} /> : <div class="bars-placeholder" />}
        </div>
      </div>
      {pictures.error && !pictures.data && <ErrorMessage error={pictures.error} />}
    </li>
  );
}

function Fact({ term, children }: { term: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** Pause / resume and delete (asked twice): owner and admin only (the callers check canAdmin). */
function MonitorActions(props: {
  monitor: Monitor;
  onChanged: (m?: Monitor) => void;
  onDeleted: () => void;
  compact?: boolean;
}) {
  const { project } = useProject();
  const m = props.monitor;
  const act = useAction();
  const q = { projectId: project.id, monitorId: m.id };
  const label = props.compact ? ` ${m.name}` : "";
  return (
    <div class="actions">
      {m.status === "paused" ? (
        <Button
          busy={act.busy}
          aria-label={`Resume${label}`}
          onClick={async () => {
            const r = await act.run(() => api.uptime.resumeMonitor(q));
            if (r) props.onChanged(r.data);
          }}
        >
          Resume
        </Button>
      ) : (
        <Button
          busy={act.busy}
          aria-label={`Pause${label}`}
          onClick={async () => {
            const r = await act.run(() => api.uptime.pauseMonitor(q));
            if (r) props.onChanged(r.data);
          }}
        >
          Pause
        </Button>
      )}
      <ConfirmButton
        label="Delete"
        confirmLabel={`Yes, delete${label || " this monitor"}`}
        busy={act.busy}
        onConfirm={async () => {
          const r = await act.run(() => api.uptime.deleteMonitor(q));
          if (r) props.onDeleted();
        }}
      />
      <ErrorMessage error={act.error} />
    </div>
  );
}

// ---------------------------------------------------------------------------------------------
// A monitor's page

const STATS_PERIODS = [
  { value: "24h", label: "Last 24 hours" },
  { value: "7d", label: "Last 7 days" },
  { value: "30d", label: "Last 30 days" },
  { value: "90d", label: "Last 90 days" },
] as const;
type StatsPeriod = (typeof STATS_PERIODS)[number]["value"];

export function MonitorDetail() {
  const { project, canAdmin } = useProject();
  const { params } = useRoute();
  const loc = useLocation();
  const monitorId = params.monitorId;
  const q = { projectId: project.id, monitorId };
  const monitor = useAsync(() => api.uptime.getMonitor(q).then((r) => r.data), [project.id, monitorId]);
  const incidents = useAsync(
    () => api.uptime.listIncidents({ ...q, limit: 50 }).then((r) => r.data),
    [project.id, monitorId],
  );
  const [slot, setSlot] = useState(() => Math.floor(Date.now() / PICTURE_MS));
  useInterval(() => {
    monitor.reload();
    incidents.reload();
    setSlot(Math.floor(Date.now() / PICTURE_MS));
  }, REFRESH_MS);
  const m = monitor.data;
  const open = m?.status === "down" ? incidents.data?.find((i) => i.status === "open") : undefined;
  const gone = monitor.error && !m;
  const back = (
    <p class="back">
      <a href={`/projects/${project.id}/uptime`}>← All monitors</a>
    </p>
  );
  if (gone)
    return (
      <>
        {back}
        <ErrorMessage error={monitor.error} />
      </>
    );
  if (!m || m.id !== monitorId) return <Loading />;
  return (
    <>
      {back}
      <PageHeader
        title={
          <span class="monitor-title">
            {m.name} <StatusBadge status={m.status} />
          </span>
        }
        subtitle={
          <>
            <code>{m.slug}</code> · last heartbeat{" "}
            <span title={formatTime(m.lastHeartbeatAt)}>{timeAgo(m.lastHeartbeatAt)}</span>
            {m.status === "up" && <> · up for {formatDuration(m.timeUp)}</>}
            {open && (
              <>
                {" "}
                · down for {formatDuration(Date.now() - Date.parse(open.startedAt))} (since {formatTime(open.startedAt)}
                )
              </>
            )}
            {m.deadlineAt && <> · down {timeAgo(m.deadlineAt)} without a heartbeat</>}
          </>
        }
        actions={
          canAdmin && (
            <MonitorActions
              monitor={m}
              onChanged={() => monitor.reload()}
              onDeleted={() => loc.route(`/projects/${project.id}/uptime`, true)}
            />
          )
        }
      />
      {monitor.error && <ErrorMessage error={monitor.error} />}
      <Stats monitor={m} slot={slot} />
      {m.schedule && (
        <div class="grid-2">
          <CronSchedule monitor={m} />
          <PingUrl monitor={m} />
        </div>
      )}
      <Runs monitor={m} slot={slot} />
      <section class="card" aria-labelledby="incidents-title">
        <h2 id="incidents-title">Incidents</h2>
        {incidents.error && <ErrorMessage error={incidents.error} />}
        {!incidents.data ? (
          !incidents.error && <Loading />
        ) : incidents.data.length === 0 ? (
          <p class="muted">
            No incidents. One opens when a heartbeat is late (after the interval and grace period) or reports{" "}
            <code>"status": "down"</code>, and closes at the next heartbeat.
          </p>
        ) : (
          <ol class="timeline">
            {incidents.data.map((i) => (
              <IncidentItem key={i.id} incident={i} monitorName={m.name} slot={slot} onChanged={incidents.reload} />
            ))}
          </ol>
        )}
      </section>
      <div class="grid-2">
        <Settings monitor={m} canAdmin={canAdmin} onSaved={monitor.reload} />
        <HeartbeatSetup monitor={m} />
      </div>
      {!m.schedule && <PingUrl monitor={m} />}
      <Heartbeats monitor={m} />
    </>
  );
}

function Stats({ monitor: m, slot }: { monitor: Monitor; slot: number }) {
  const { project } = useProject();
  const [period, setPeriod] = useState<StatsPeriod>("24h");
  const q = { projectId: project.id, monitorId: m.id };
  const stats = useAsync(
    () => api.uptime.getMonitorStats({ ...q, period }).then((r) => r.data),
    [m.id, period, m.status, m.lastHeartbeatAt, slot],
  );
  const pictures = useAsync(async () => {
    const [days, beats] = await Promise.all([
      api.uptime.getMonitorHistory({ ...q, window: "90d" }),
      api.uptime.listHeartbeats({ ...q, from: new Date(Date.now() - 24 * HOUR_MS).toISOString(), limit: 1000 }),
    ]);
    return { days: days.data?.buckets ?? [], heartbeats: beats.data };
  }, [m.id, m.status, slot]);
  const s = stats.data;
  const latencies = (pictures.data?.heartbeats ?? []).filter((h) => h.latencyMs !== undefined).reverse();
  return (
    <section class="card" aria-labelledby="stats-title">
      <div class="card-head">
        <h2 id="stats-title">Stats</h2>
        <Select label="Stats period" hideLabel value={period} options={STATS_PERIODS} onValue={setPeriod} />
      </div>
      {stats.error && <ErrorMessage error={stats.error} />}
      {s ? (
        <dl class="stats">
          <Stat
            term="Uptime"
            value={formatPercent(s.uptimePercentage)}
            note={s.uptimePercentage === undefined ? "no data: no heartbeat in this period yet" : undefined}
          />
          <Stat term="Downtime" value={formatDuration(s.downtimeMs)} />
          <Stat term="Incidents" value={formatNumber(s.incidentCount)} />
          <Stat
            term="Heartbeats"
            value={formatNumber(s.totalHeartbeats)}
            note={s.failedHeartbeats > 0n ? `${formatNumber(s.failedHeartbeats)} failed` : "none failed"}
          />
          <Stat
            term="Latency (avg)"
            value={s.avgLatencyMs === undefined ? "—" : `${formatNumber(s.avgLatencyMs)} ms`}
            note={
              s.minLatencyMs === undefined
                ? "no latency reported"
                : `${formatNumber(s.minLatencyMs)}–${formatNumber(s.maxLatencyMs)} ms`
            }
          />
        </dl>
      ) : (
        !stats.error && <Loading />
      )}
      {pictures.error && <ErrorMessage error={pictures.error} />}
      {pictures.data && (
        <>
          <h3>Last 90 days</h3>
          <DayBars buckets={pictures.data.days} name={m.name} />
          {latencies.length > 1 && (
            <>
              <h3>Latency, last 24 hours</h3>
              <TimeChart
                title={`Latency of ${m.name}, last 24 hours`}
                x={latencies.map((h) => Date.parse(h.at) / 1000)}
                series={[{ label: "Latency", values: latencies.map((h) => h.latencyMs ?? null) }]}
                height={180}
                format={(v) => `${formatNumber(v)} ms`}
              />
            </>
          )}
        </>
      )}
    </section>
  );
}

function Stat({ term, value, note }: { term: string; value: string; note?: string }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd class="stat">{value}</dd>
      {note && <dd class="muted">{note}</dd>}
    </div>
  );
}

/** The monitor's settings: editable by owner and admin, read by members. */
function Settings({ monitor: m, canAdmin, onSaved }: { monitor: Monitor; canAdmin: boolean; onSaved: () => void }) {
  const { project } = useProject();
  const [name, setName] = useState(m.name);
  const [slug, setSlug] = useState(m.slug);
  const [interval, setIntervalText] = useState(secondsOf(m.expectedIntervalMs));
  const [grace, setGrace] = useState(secondsOf(m.gracePeriodMs));
  const [cron, setCron] = useState(m.schedule?.cron ?? "");
  const [zone, setZone] = useState(m.schedule?.timezone ?? "UTC");
  const [maxRuntime, setMaxRuntime] = useState(m.maxRuntimeMs === undefined ? "" : secondsOf(m.maxRuntimeMs));
  const [tolerance, setTolerance] = useState(String(m.failureTolerance));
  const [saved, setSaved] = useState(false);
  const save = useAction();
  const schedule = scheduleOf(cron, zone);
  const scheduleChanged =
    schedule?.cron !== m.schedule?.cron ||
    (schedule !== undefined && schedule.timezone !== (m.schedule?.timezone ?? "UTC"));
  // A cleared schedule is sent as the interval (which clears it); a new one replaces the interval.
  const intervalChanged = msOf(interval) !== m.expectedIntervalMs || (!schedule && m.schedule !== undefined);
  // A blank max runtime clears the limit (0 on PATCH).
  const maxRuntimeMs = msOf(maxRuntime) ?? 0n;
  const maxRuntimeChanged = maxRuntimeMs !== (m.maxRuntimeMs ?? 0n);
  const toleranceChanged = countOf(tolerance) !== m.failureTolerance;
  const changed =
    name !== m.name ||
    slug !== m.slug ||
    scheduleChanged ||
    intervalChanged ||
    msOf(grace) !== m.gracePeriodMs ||
    maxRuntimeChanged ||
    toleranceChanged;
  return (
    <section class="card" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form
        class="settings-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setSaved(false);
          const r = await save.run(() =>
            api.uptime.updateMonitor({
              projectId: project.id,
              monitorId: m.id,
              name: name !== m.name ? name : undefined,
              slug: slug !== m.slug ? slug : undefined,
              schedule: schedule && scheduleChanged ? schedule : undefined,
              expectedIntervalMs: !schedule && intervalChanged ? msOf(interval) : undefined,
              gracePeriodMs: msOf(grace) !== m.gracePeriodMs ? msOf(grace) : undefined,
              maxRuntimeMs: maxRuntimeChanged ? maxRuntimeMs : undefined,
              failureTolerance: toleranceChanged ? countOf(tolerance) : undefined,
            }),
          );
          if (r?.data) {
            setSaved(true);
            onSaved();
          }
        }}
      >
        <Field label="Name" value={name} onValue={setName} field="name" error={save.error} disabled={!canAdmin} />
        <Field label="Slug" value={slug} onValue={setSlug} field="slug" error={save.error} disabled={!canAdmin} />
        <Field
          label="Expected interval (seconds)"
          inputMode="decimal"
          value={interval}
          onValue={setIntervalText}
          field="expectedIntervalMs"
          error={save.error}
          disabled={!canAdmin}
          hint={formatDuration(m.expectedIntervalMs)}
        />
        <Field
          label="Grace period (seconds)"
          inputMode="decimal"
          value={grace}
          onValue={setGrace}
          field="gracePeriodMs"
          error={save.error}
          disabled={!canAdmin}
          hint={formatDuration(m.gracePeriodMs)}
        />
        <CronFields
          cron={cron}
          setCron={setCron}
          zone={zone}
          setZone={setZone}
          maxRuntime={maxRuntime}
          setMaxRuntime={setMaxRuntime}
          tolerance={tolerance}
          setTolerance={setTolerance}
          error={save.error}
          disabled={!canAdmin}
        />
        {canAdmin ? (
          <div class="actions">
            <Button variant="primary" type="submit" busy={save.busy} disabled={!changed}>
              Save settings
            </Button>
            {saved && !changed && <span role="status">Saved.</span>}
          </div>
        ) : (
          <p class="muted">Only the project's owner and admins can change a monitor.</p>
        )}
      </form>
      <ErrorMessage error={save.error} />
      <p class="muted small">
        Type {m.type} · created {formatTime(m.createdAt)} · deadline {m.deadlineAt ? formatTime(m.deadlineAt) : "none"}
      </p>
    </section>
  );
}

function HeartbeatSetup({ monitor: m }: { monitor: Monitor }) {
  const { project } = useProject();
  const curl = heartbeatCurl(project.id, m.slug);
  return (
    <section class="card" aria-labelledby="setup-title">
      <h2 id="setup-title">Send heartbeats</h2>
      <p>
        {m.schedule ? "At each run" : `Every ${formatDuration(m.expectedIntervalMs)}`} from the job or service it
        watches (with a secret key from <a href={`/projects/${project.id}/keys`}>API keys</a>):
      </p>
      <pre class="curl">{curl}</pre>
      <p class="muted">
        Optional body fields: <code>latencyMs</code>, <code>"status": "down"</code> (opens an incident at once),{" "}
        <code>metadata</code>.
      </p>
    </section>
  );
}

/** One incident: its times, title and description (editable by any member), and its updates. */
function IncidentItem(props: { incident: Incident; monitorName: string; slot: number; onChanged: () => void }) {
  const { project } = useProject();
  const i = props.incident;
  const [editing, setEditing] = useState(false);
  const updates = useAsync(
    () => api.uptime.listIncidentUpdates({ projectId: project.id, incidentId: i.id }).then((r) => r.data),
    [i.id, i.updatedAt, props.slot],
  );
  const [message, setMessage] = useState("");
  const post = useAction();
  const title = i.title ?? `${props.monitorName} ${i.status === "open" ? "is down" : "was down"}`;
  return (
    <li class={`incident incident-${i.status}`}>
      <article aria-labelledby={`incident-${i.id}`}>
        <header class="incident-head">
          <h3 id={`incident-${i.id}`}>{title}</h3>
          <StatusBadge status={i.status} />
        </header>
        <p class="muted small">
          Started {formatTime(i.startedAt)}
          {i.endedAt ? (
            <>
              {" "}
              · resolved {formatTime(i.endedAt)} · lasted {formatDuration(i.durationMs)}
            </>
          ) : (
            <> · ongoing for {formatDuration(Date.now() - Date.parse(i.startedAt))}</>
          )}
        </p>
        {editing ? (
          <EditIncident
            incident={i}
            onDone={(saved) => {
              setEditing(false);
              if (saved) props.onChanged();
            }}
          />
        ) : (
          <>
            {i.description ? <p class="incident-description">{i.description}</p> : <p class="muted">No description.</p>}
            <Button variant="link" aria-label={`Edit incident “${title}”`} onClick={() => setEditing(true)}>
              Edit title and description
            </Button>
          </>
        )}
        <h4 class="visually-hidden">Updates</h4>
        {updates.error && <ErrorMessage error={updates.error} />}
        {updates.data && updates.data.length > 0 && (
          <ol class="updates" aria-label={`Updates of “${title}”`}>
            {updates.data.map((u) => (
              <li key={u.id}>
                <time dateTime={u.createdAt} class="muted small">
                  {formatTime(u.createdAt)}
                </time>
                <p>{u.message}</p>
              </li>
            ))}
          </ol>
        )}
        <form
          class="update-form"
          onSubmit={async (e) => {
            e.preventDefault();
            const r = await post.run(() =>
              api.uptime.createIncidentUpdate({ projectId: project.id, incidentId: i.id, message }),
            );
            if (r) {
              setMessage("");
              updates.reload();
            }
          }}
        >
          <TextArea
            label="Post an update"
            value={message}
            onValue={setMessage}
            rows={2}
            error={post.error}
            field="message"
            hint="Shown on the status pages that list this monitor."
          />
          <Button type="submit" busy={post.busy} disabled={message.trim() === ""}>
            Post update
          </Button>
        </form>
        <ErrorMessage error={post.error} />
      </article>
    </li>
  );
}

function EditIncident({ incident: i, onDone }: { incident: Incident; onDone: (saved: boolean) => void }) {
  const { project } = useProject();
  const [title, setTitle] = useState(i.title ?? "");
  const [description, setDescription] = useState(i.description ?? "");
  const save = useAction();
  return (
    <form
      class="incident-edit"
      onSubmit={async (e) => {
        e.preventDefault();
        // An empty field clears it (the API's rule); both are sent so what is shown is what is kept.
        const r = await save.run(() =>
          api.uptime.updateIncident({ projectId: project.id, incidentId: i.id, title, description }),
        );
        if (r) onDone(true);
      }}
    >
      <Field label="Incident title" value={title} onValue={setTitle} field="title" error={save.error} maxLength={200} />
      <TextArea
        label="Incident description"
        value={description}
        onValue={setDescription}
        rows={4}
        field="description"
        error={save.error}
      />
      <div class="actions">
        <Button variant="primary" type="submit" busy={save.busy}>
          Save incident
        </Button>
        <Button onClick={() => onDone(false)}>Cancel</Button>
      </div>
      <ErrorMessage error={save.error} />
    </form>
  );
}

/** A labelled textarea whose field violation shows under it (Field's twin). */
function TextArea(props: {
  label: string;
  value: string;
  onValue: (v: string) => void;
  rows?: number;
  field?: string;
  error?: unknown;
  hint?: string;
}) {
  const id = useId();
  const message = props.field ? fieldErrors(props.error)[props.field] : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <textarea
        id={id}
        rows={props.rows}
        value={props.value}
        aria-invalid={message ? true : undefined}
        aria-describedby={message || props.hint ? `${id}-note` : undefined}
        onInput={(e) => props.onValue((e.target as HTMLTextAreaElement).value)}
      />
      {(message || props.hint) && (
        <small id={`${id}-note`} class={message ? "field-error" : "muted"}>
          {message ?? props.hint}
        </small>
      )}
    </div>
  );
}

const PAGE = 20;

/**
 * The heartbeats, newest first, in pages of 20. ListHeartbeats pages by time (`to`, inclusive):
 * the next page asks up to the last shown heartbeat's time and leaves out the ones already shown
 * at that same millisecond. The first page follows new heartbeats; older pages stay put.
 */
function Heartbeats({ monitor: m }: { monitor: Monitor }) {
  const { project } = useProject();
  // The pages before the current one: each the `to` of its request and the ids shown at that time.
  const [stack, setStack] = useState<{ to: string; seen: string[] }[]>([]);
  const cursor = stack[stack.length - 1];
  const beats = useAsync(async () => {
    const r = await api.uptime.listHeartbeats({
      projectId: project.id,
      monitorId: m.id,
      to: cursor?.to,
      limit: PAGE + 1 + (cursor?.seen.length ?? 0),
    });
    const rows = cursor ? r.data.filter((h) => !(h.at === cursor.to && cursor.seen.includes(h.id))) : r.data;
    return { rows: rows.slice(0, PAGE), more: rows.length > PAGE };
  }, [m.id, cursor, cursor ? undefined : m.lastHeartbeatAt]);
  useEffect(() => setStack([]), [m.id]);
  const rows = beats.data?.rows ?? [];
  const last = rows[rows.length - 1];
  const older = () => {
    if (!last) return;
    const sameMs = rows.filter((h: Heartbeat) => h.at === last.at).map((h) => h.id);
    const seen = cursor && cursor.to === last.at ? [...cursor.seen, ...sameMs] : sameMs;
    setStack([...stack, { to: last.at, seen }]);
  };
  return (
    <section class="card" aria-labelledby="heartbeats-title">
      <div class="card-head">
        <h2 id="heartbeats-title">Heartbeats</h2>
        <div class="actions">
          <Button disabled={stack.length === 0} onClick={() => setStack([])}>
            Newest
          </Button>
          <Button disabled={!beats.data?.more} onClick={older}>
            Older
          </Button>
        </div>
      </div>
      {beats.error && <ErrorMessage error={beats.error} />}
      {!beats.data ? (
        !beats.error && <Loading />
      ) : rows.length === 0 ? (
        <p class="muted">No heartbeats yet. Send the first with the command above.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Received</th>
              <th>Status</th>
              <th class="num">Latency</th>
              <th>Metadata</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((h) => (
              <tr key={h.id}>
                <td>
                  <time dateTime={h.at} title={h.at}>
                    {formatTime(h.at)}
                  </time>
                </td>
                <td>
                  <StatusBadge status={h.status} />
                </td>
                <td class="num">{h.latencyMs === undefined ? "—" : `${formatNumber(h.latencyMs)} ms`}</td>
                <td>
                  {h.metadata && Object.keys(h.metadata).length > 0 ? (
                    <code class="metadata">{JSON.stringify(h.metadata)}</code>
                  ) : (
                    <span class="muted">—</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {stack.length > 0 && <p class="muted small">Page {stack.length + 1}, older heartbeats.</p>}
    </section>
  );
}
