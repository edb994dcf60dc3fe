import cronstrue from "cronstrue";
import type { Monitor, Run } from "../../../gen/vigil/v1/uptime_pb.js";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { TimeChart } from "../ui/chart.js";
import { formatDuration, formatNumber, formatTime } from "../ui/format.js";
import { useAsync } from "../ui/hooks.js";
import { CopyButton, ErrorMessage, Loading, StatusBadge } from "../ui/kit.js";
import { pingCurl, pingKeyOfSession, pingUrl } from "../ui/ping-keys.js";

// The cron job views of a monitor's page (issue #32, docs/uptime.md "Cron jobs"): its schedule in
// words with its next runs, its runs (outcome, duration, exit code, output) with a duration chart,
// and its ping URL. The words come from cronstrue (Vixie cron's five fields, as the server reads
// them); the times from the server (GET .../schedule), never computed here.

/** How many next runs the schedule card lists. */
const NEXT_RUNS = 5;
/** How many runs the list and the chart show (the newest). */
const RUNS_SHOWN = 50;

/** A five-field cron expression in English ("At 03:00, only on Monday"); the expression itself if it does not parse. */
export function cronInWords(cron: string): string {
  try {
    return cronstrue.toString(cron, { use24HourTimeFormat: true, verbose: false });
  } catch {
    return cron;
  }
}

/** A time in the schedule's own zone ("Mon, 30 Nov, 03:00"), beside the reader's. */
function inZone(iso: string, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, {
      timeZone,
      weekday: "short",
      day: "numeric",
      month: "short",
      hour: "2-digit",
      minute: "2-digit",
    }).format(new Date(iso));
  } catch {
    return iso;
  }
}

/** The schedule in words and its zone, the next runs, and the run limits. */
export function CronSchedule({ monitor: m }: { monitor: Monitor }) {
  const { project } = useProject();
  const schedule = m.schedule;
  const next = useAsync(
    () =>
      schedule
        ? api.uptime
            .getMonitorSchedule({ projectId: project.id, monitorId: m.id, count: NEXT_RUNS })
            .then((r) => r.data)
        : Promise.resolve(undefined),
    [m.id, schedule?.cron, schedule?.timezone, m.lastHeartbeatAt],
  );
  if (!schedule) return null;
  const zone = schedule.timezone ?? "UTC";
  return (
    <section class="card" aria-labelledby="schedule-title">
      <h2 id="schedule-title">Schedule</h2>
      <p class="schedule-words" data-testid="schedule-words">
        <strong>{cronInWords(schedule.cron)}</strong> ({zone})
      </p>
      <p class="muted small">
        <code>{schedule.cron}</code> · late after {formatDuration(m.gracePeriodMs)} grace
        {m.maxRuntimeMs !== undefined && <> · a run may take {formatDuration(m.maxRuntimeMs)}</>}
        {m.failureTolerance > 0 && <> · down at {m.failureTolerance + 1} failed runs in a row</>}
      </p>
      <h3>Next runs</h3>
      {next.error && <ErrorMessage error={next.error} />}
      {!next.data ? (
        !next.error && <Loading />
      ) : (
        <ol class="next-runs" aria-label="Next runs">
          {next.data.next.map((at) => (
            <li key={at}>
              <time dateTime={at}>{inZone(at, zone)}</time> <span class="muted small">({formatTime(at)} here)</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** The runs, newest first, and a chart of their durations (oldest to newest). */
export function Runs({ monitor: m, slot }: { monitor: Monitor; slot: number }) {
  const { project } = useProject();
  const runs = useAsync(
    () => api.uptime.listRuns({ projectId: project.id, monitorId: m.id, limit: RUNS_SHOWN }).then((r) => r.data),
    [m.id, m.status, m.lastHeartbeatAt, m.deadlineAt, slot],
  );
  const list = runs.data;
  // An interval monitor that never reported a run has no card (its heartbeats say it all).
  if (!m.schedule && list?.length === 0) return null;
  const timed = (list ?? []).filter((r) => r.durationMs !== undefined && r.endedAt).reverse();
  return (
    <section class="card" aria-labelledby="runs-title">
      <h2 id="runs-title">Runs</h2>
      {runs.error && <ErrorMessage error={runs.error} />}
      {!list ? (
        !runs.error && <Loading />
      ) : list.length === 0 ? (
        <p class="muted">
          No runs yet. A job reports one with <code>/start</code> and then its end (a heartbeat, <code>/fail</code> or{" "}
          <code>/exit/&lt;code&gt;</code>).
        </p>
      ) : (
        <>
          {timed.length > 1 && (
            <>
              <h3>Duration of the last {timed.length} runs</h3>
              <TimeChart
                title={`Run durations of ${m.name}`}
                x={timed.map((r) => Date.parse(r.endedAt ?? "") / 1000)}
                series={[{ label: "Duration", values: timed.map((r) => Number(r.durationMs)) }]}
                kind="bars"
                height={160}
                format={(v) => formatDuration(v)}
              />
            </>
          )}
          <table aria-label={`Runs of ${m.name}`}>
            <thead>
              <tr>
                <th>Started</th>
                <th>Outcome</th>
                <th class="num">Duration</th>
                <th class="num">Exit code</th>
                <th>Run id</th>
                <th>Output</th>
              </tr>
            </thead>
            <tbody>
              {list.map((r) => (
                <RunRow key={r.id} run={r} />
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function RunRow({ run: r }: { run: Run }) {
  const at = r.startedAt ?? r.endedAt;
  return (
    <tr>
      <td>
        <time dateTime={at} title={r.startedAt ? undefined : "an end without a start"}>
          {formatTime(at)}
        </time>
      </td>
      <td>
        <StatusBadge status={r.outcome} />
      </td>
      <td class="num">{r.durationMs === undefined ? "—" : formatDuration(r.durationMs)}</td>
      <td class="num">{r.exitCode === undefined ? "—" : formatNumber(r.exitCode)}</td>
      <td>{r.runId ? <code>{r.runId}</code> : <span class="muted">—</span>}</td>
      <td>
        {r.output ? (
          <details>
            <summary>{r.output.length > 60 ? `…${r.output.slice(-60)}` : r.output}</summary>
            <pre class="run-output">{r.output}</pre>
          </details>
        ) : (
          <span class="muted">—</span>
        )}
      </td>
    </tr>
  );
}

/**
 * The monitor's ping URL: in full when a ping key was created in this session (its secret is shown
 * once), else with a placeholder, saying which ping keys exist (owners and admins see the key list).
 */
export function PingUrl({ monitor: m }: { monitor: Monitor }) {
  const { project, canAdmin } = useProject();
  const mine = pingKeyOfSession(project.id);
  const keys = useAsync(
    () =>
      canAdmin && !mine
        ? api.projects.listApiKeys({ projectId: project.id }).then((r) => r.data.filter((k) => k.kind === "ping"))
        : Promise.resolve(undefined),
    [project.id, canAdmin, mine?.secret],
  );
  const keysHref = `/projects/${project.id}/keys`;
  const url = pingUrl(mine?.secret ?? "<ping-key>", m.slug);
  const curl = pingCurl(url);
  const shown = (
    <>
      <pre class="curl" data-copy={curl} data-testid="ping-url">
        {curl}
      </pre>
      <CopyButton text={curl} label="Copy command" />
      <p class="muted small">
        Runs: <code>{`${url}/start`}</code> before the job, then <code>{`${url}/exit/$?`}</code> with its exit code (or{" "}
        <code>/fail</code>). GET or POST, no header.
      </p>
    </>
  );
  return (
    <section class="card" aria-labelledby="ping-title">
      <h2 id="ping-title">Ping URL</h2>
      {mine ? (
        <>
          <p>With the ping key “{mine.name}” you just created (its secret is not shown again):</p>
          {shown}
        </>
      ) : !canAdmin ? (
        <>
          <p>
            With a ping key of this project (an owner or admin creates one under API keys) in place of the placeholder:
          </p>
          {shown}
        </>
      ) : keys.error ? (
        <ErrorMessage error={keys.error} />
      ) : !keys.data ? (
        <Loading />
      ) : keys.data.length === 0 ? (
        <p>
          No ping key yet. <a href={keysHref}>Create a ping key</a> (kind “Ping”): it can only send heartbeats and runs,
          so it is safe in a crontab. This card then shows the URL to call.
        </p>
      ) : (
        <>
          <p>
            Ping key{keys.data.length > 1 ? "s" : ""}{" "}
            {keys.data.map((k, i) => (
              <span key={k.id}>
                {i > 0 && ", "}“{k.name}” (<code>{k.prefix}…</code>)
              </span>
            ))}{" "}
            exist{keys.data.length > 1 ? "" : "s"}; a key's secret was shown once, when it was created. Put it in place
            of <code>&lt;ping-key&gt;</code>, or <a href={keysHref}>create a new one</a>.
          </p>
          {shown}
        </>
      )}
    </section>
  );
}
