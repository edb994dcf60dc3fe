import type { Heartbeat, HistoryBucket } from "../../../gen/vigil/v1/uptime_pb.js";
import { formatDuration, formatNumber, formatPercent } from "./format.js";
import "./uptime-charts.css";

// A monitor's small pictures: the 24-hour sparkline and the 90-day bars (the uptime list, the
// monitor's page). Both are a few dozen SVG/HTML boxes drawn from GetMonitorHistory buckets (and the
// heartbeats' latencies): too small for a uPlot canvas, and a box per bucket can carry its own
// accessible label ("2026-11-20: 99.2 % up"), which a canvas cannot.

/** The tone of a bucket: up, a little downtime (at least 99 % up), down, paused or no data. */
function bucketTone(b: HistoryBucket): "up" | "partial" | "down" | "paused" | "unknown" {
  if (b.status === "down") return (b.uptimePercentage ?? 0) >= 99 ? "partial" : "down";
  if (b.status === "up" || b.status === "paused") return b.status;
  return "unknown";
}

/** "2026-11-20: 99.2 % up, 12 min down" — what a day's (or an hour's) box says. */
function bucketLabel(b: HistoryBucket, hourly = false): string {
  const when = hourly ? `${b.start.slice(0, 10)} ${b.start.slice(11, 16)} UTC` : b.start.slice(0, 10);
  switch (b.status) {
    case "up":
      return `${when}: ${formatPercent(b.uptimePercentage ?? 100)} up`;
    case "down":
      return `${when}: ${formatPercent(b.uptimePercentage ?? 0)} up, ${formatDuration(b.downtimeMs)} down`;
    case "paused":
      return `${when}: paused`;
    default:
      return `${when}: no data`;
  }
}

/** One bar per day (oldest first, today last), coloured by the day's status, each with its label. */
export function DayBars({ buckets, name }: { buckets: HistoryBucket[]; name: string }) {
  const days = buckets.length;
  const known = buckets.filter((b) => b.status === "up" || b.status === "down");
  const downDays = known.filter((b) => b.status === "down").length;
  return (
    <div class="day-bars-wrap">
      <div class="day-bars" role="group" aria-label={`Last ${days} days of ${name}`}>
        {buckets.map((b) => {
          const label = bucketLabel(b);
          return <span key={b.start} class={`day day-${bucketTone(b)}`} role="img" aria-label={label} title={label} />;
        })}
      </div>
      <div class="day-bars-legend muted">
        <span>{days} days ago</span>
        <span>
          {known.length === 0
            ? "no data yet"
            : downDays === 0
              ? `no downtime in ${known.length} ${known.length === 1 ? "day" : "days"} with data`
              : `downtime on ${downDays} of ${known.length} ${known.length === 1 ? "day" : "days"} with data`}
        </span>
        <span>today</span>
      </div>
    </div>
  );
}

const W = 240;
const H = 40;
const STRIP = 5;

/**
 * The last 24 hours: a strip of hourly boxes coloured by status along the bottom, and above it a
 * line of the hourly average latency (from the heartbeats' latencyMs), or of the hourly uptime
 * percentage when the heartbeats carry no latency.
 */
export function Sparkline24h({
  buckets,
  heartbeats,
  name,
}: {
  buckets: HistoryBucket[];
  heartbeats: Heartbeat[];
  name: string;
}) {
  const n = buckets.length;
  if (n === 0) return null;
  const bounds = buckets.map((b) => [Date.parse(b.start), Date.parse(b.end)] as const);
  const sums = buckets.map(() => ({ total: 0, count: 0 }));
  for (const h of heartbeats) {
    if (h.latencyMs === undefined) continue;
    const at = Date.parse(h.at);
    const i = bounds.findIndex(([s, e]) => at >= s && at < e);
    if (i >= 0) {
      sums[i].total += h.latencyMs;
      sums[i].count++;
    }
  }
  const latency = sums.some((s) => s.count > 0);
  const values: (number | null)[] = latency
    ? sums.map((s) => (s.count ? s.total / s.count : null))
    : buckets.map((b) => (b.status === "up" || b.status === "down" ? (b.uptimePercentage ?? null) : null));
  const present = values.filter((v): v is number => v !== null);
  const lo = latency ? 0 : Math.min(90, ...present);
  const hi = latency ? Math.max(1, ...present) * 1.15 : 100;
  const step = W / n;
  const y = (v: number) => 2 + (H - STRIP - 6) * (1 - (v - lo) / (hi - lo || 1));
  // A line per run of hours with values (no line across hours without any).
  const runs: string[] = [];
  let run: string[] = [];
  values.forEach((v, i) => {
    if (v === null) {
      if (run.length) runs.push(run.join(" "));
      run = [];
      return;
    }
    run.push(`${(i * step + step / 2).toFixed(1)},${y(v).toFixed(1)}`);
  });
  if (run.length) runs.push(run.join(" "));
  const downHours = buckets.filter((b) => b.status === "down").length;
  const summary = latency
    ? `latency ${formatNumber(Math.min(...present))}–${formatNumber(Math.max(...present))} ms (hourly average)`
    : present.length
      ? `uptime ${formatPercent(Math.min(...present))} at worst in an hour`
      : "no heartbeats";
  const label = `Last 24 hours of ${name}: ${summary}; ${downHours ? `downtime in ${downHours} of ${n} hours` : "no downtime"}`;
  return (
    <svg class="sparkline" viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={label}>
      <title>{label}</title>
      {buckets.map((b, i) => (
        <rect
          key={b.start}
          class={`hour hour-${bucketTone(b)}`}
          x={i * step + 0.5}
          y={H - STRIP}
          width={Math.max(1, step - 1)}
          height={STRIP}
        />
      ))}
      {runs.map((points) =>
        points.includes(" ") ? (
          <polyline key={points} class="spark-line" points={points} vector-effect="non-scaling-stroke" />
        ) : (
          <circle key={points} class="spark-dot" cx={points.split(",")[0]} cy={points.split(",")[1]} r="1.5" />
        ),
      )}
    </svg>
  );
}
