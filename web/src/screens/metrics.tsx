import { useMemo, useState } from "preact/hooks";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { ChartTable, TimeChart, type Series } from "../ui/chart.js";
import { curlPost } from "../ui/curl.js";
import { formatNumber, formatTime, timeAgo } from "../ui/format.js";
import { useAsync } from "../ui/hooks.js";
import { Button, CopyButton, Empty, ErrorMessage, Loading, PageHeader, Select } from "../ui/kit.js";
import { rangeOf, TimeRangePicker, type Range } from "../ui/time-range.js";
import { useQueryState } from "../ui/url-state.js";
import "./analytics.css";
import "./metrics.css";

// Metrics: the project's metric names with their type and current value (ListMetrics, then one
// GetCurrentMetric per name), and the chosen metric's series (GetMetricTimeseries) with its
// aggregation, interval and time range, all in the URL: `metric`, `agg`, `interval`, `range`.

const AGGREGATIONS = ["avg", "sum", "min", "max", "count", "p50", "p75", "p90", "p95", "p99"] as const;
type Aggregation = (typeof AGGREGATIONS)[number];
const AGG_LABEL: Record<Aggregation, string> = {
  avg: "Average",
  sum: "Sum (net change)",
  min: "Minimum",
  max: "Maximum",
  count: "Number of points",
  p50: "Median (p50)",
  p75: "p75",
  p90: "p90",
  p95: "p95",
  p99: "p99",
};

const METRIC_INTERVALS = ["1m", "5m", "15m", "30m", "1h", "6h", "12h", "1d", "1w"] as const;
type MetricInterval = (typeof METRIC_INTERVALS)[number];
const STEP_S: Record<MetricInterval, number> = {
  "1m": 60,
  "5m": 300,
  "15m": 900,
  "30m": 1800,
  "1h": 3600,
  "6h": 21600,
  "12h": 43200,
  "1d": 86400,
  "1w": 604800,
};
const INTERVAL_LABEL: Record<MetricInterval, string> = {
  "1m": "1 minute",
  "5m": "5 minutes",
  "15m": "15 minutes",
  "30m": "30 minutes",
  "1h": "1 hour",
  "6h": "6 hours",
  "12h": "12 hours",
  "1d": "1 day",
  "1w": "1 week",
};

/** The interval a range gets when the URL names none: the finest giving at most ~200 buckets. */
function defaultMetricInterval(range: Range): MetricInterval {
  const s = (Date.parse(range.to) - Date.parse(range.from)) / 1000;
  return METRIC_INTERVALS.find((i) => s / STEP_S[i] <= 200) ?? "1w";
}

/** Buckets are aligned from Monday 1970-01-05T00:00Z (docs/metrics.md "Timeseries"). */
const ORIGIN_S = 4 * 86400;

const formatValue = (v: number | null | undefined, unit?: string) =>
  v === null || v === undefined
    ? "—"
    : `${Number.isInteger(v) ? formatNumber(v) : v.toLocaleString(undefined, { maximumFractionDigits: 3 })}${unit ? ` ${unit}` : ""}`;

export function Metrics() {
  const { project } = useProject();
  const [query, set] = useQueryState();
  // Refresh: the list, current values and chart are asked again (a preset range moves up to now).
  const [refreshed, setRefreshed] = useState(0);
  const names = useAsync(
    () => api.metrics.listMetrics({ projectId: project.id }).then((r) => r.data),
    [project.id, refreshed],
  );
  const list = names.data ?? [];
  const chosen = list.find((m) => m.name === query.metric) ?? (query.metric ? undefined : list[0]);
  return (
    <>
      <PageHeader
        title="Metrics"
        subtitle="Measurements and counters your apps record, with their current value and history."
        actions={
          list.length > 0 && (
            <>
              <Button onClick={() => setRefreshed((n) => n + 1)} busy={names.loading}>
                Refresh
              </Button>
              <CopyButton text={location.href} label="Copy link" />
            </>
          )
        }
      />
      <ErrorMessage error={names.error} />
      {names.loading && !names.data && <Loading />}
      {names.data && list.length === 0 && <NoMetricsYet projectId={project.id} />}
      {list.length > 0 && (
        <div class="metrics-layout">
          <MetricList
            projectId={project.id}
            names={list}
            chosen={chosen?.name}
            hrefOf={(name) => {
              const q = new URLSearchParams(query);
              q.set("metric", name);
              q.delete("agg");
              return `/projects/${project.id}/metrics?${q}`;
            }}
          />
          {chosen ? (
            <MetricChart
              projectId={project.id}
              name={chosen.name}
              type={chosen.type}
              query={query}
              set={set}
              refreshed={refreshed}
            />
          ) : (
            <ErrorMessage error={`This project has no metric named “${query.metric}”. Choose one from the list.`} />
          )}
        </div>
      )}
    </>
  );
}

function MetricList(props: {
  projectId: string;
  names: { name: string; type: string }[];
  chosen: string | undefined;
  hrefOf: (name: string) => string;
}) {
  const { projectId, names } = props;
  // The current values, asked all at once beside the chart (never before it).
  const current = useAsync(
    () =>
      Promise.all(
        names.map((m) =>
          api.metrics.getCurrentMetric({ projectId, name: m.name }).then(
            (r) => ({ value: r.data?.value, at: r.data?.lastTimestamp, error: undefined }),
            (err: unknown) => ({ value: undefined, at: undefined, error: err }),
          ),
        ),
      ),
    [projectId, names],
  );
  return (
    <section class="card metric-list" aria-labelledby="metric-list-title">
      <h2 id="metric-list-title">Metrics</h2>
      <table aria-labelledby="metric-list-title">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" class="num">
              Current
            </th>
          </tr>
        </thead>
        <tbody>
          {names.map((m, i) => {
            const c = current.data?.[i];
            return (
              <tr key={m.name} class={m.name === props.chosen ? "chosen-row" : undefined}>
                <td>
                  <a href={props.hrefOf(m.name)} aria-current={m.name === props.chosen ? "true" : undefined}>
                    {m.name}
                  </a>
                  <small class="muted">{m.type}</small>
                </td>
                <td class="num" title={c?.at ? `Last recorded ${formatTime(c.at)}` : undefined}>
                  {c?.error ? (
                    <span class="field-error">unavailable</span>
                  ) : c ? (
                    <>
                      <span class="current">{formatValue(c.value)}</span>
                      <small class="muted">{timeAgo(c.at)}</small>
                    </>
                  ) : (
                    "…"
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {current.error && <ErrorMessage error={current.error} />}
      <p class="muted">Counters show their all-time total; measurements their latest value.</p>
    </section>
  );
}

function MetricChart(props: {
  projectId: string;
  name: string;
  type: string;
  query: Record<string, string>;
  set: (changes: Record<string, string | undefined>, push?: boolean) => void;
  refreshed: number;
}) {
  const { projectId, name, type, query, set } = props;
  const key = JSON.stringify([query.range, query.from, query.to, props.refreshed]);
  const range = useMemo(() => rangeOf(query, "24h"), [key]);
  const counter = type === "counter";
  const fallbackAgg: Aggregation = counter ? "sum" : "avg";
  const agg: Aggregation = AGGREGATIONS.includes(query.agg as Aggregation) ? (query.agg as Aggregation) : fallbackAgg;
  const interval: MetricInterval = METRIC_INTERVALS.includes(query.interval as MetricInterval)
    ? (query.interval as MetricInterval)
    : defaultMetricInterval(range);
  const time = { start: range.from, end: range.to };
  const ts = useAsync(
    () => api.metrics.getMetricTimeseries({ projectId, name, interval, aggregation: agg, time }).then((r) => r.data),
    [projectId, name, interval, agg, key],
  );
  const overall = useAsync(
    () => api.metrics.queryMetric({ projectId, name, aggregation: agg, time }).then((r) => r.data),
    [projectId, name, agg, key],
  );
  const unit = ts.data?.unit ?? overall.data?.unit;
  // Empty buckets are omitted by the API: the chart gets the whole grid, a gap (or 0 for sums
  // and counts, which are 0 there) where no point fell.
  const { x, series } = useMemo(() => {
    const buckets = ts.data?.buckets ?? [];
    const step = STEP_S[interval];
    const from = Math.floor(Date.parse(range.from) / 1000);
    const to = Math.floor(Date.parse(range.to) / 1000);
    const first = ORIGIN_S + Math.floor((from - ORIGIN_S) / step) * step;
    const byTime = new Map(buckets.map((b) => [Date.parse(b.timestamp) / 1000, b.value ?? null]));
    const empty = agg === "sum" || agg === "count" ? 0 : null;
    let xs: number[];
    if ((to - first) / step <= 5000) {
      xs = [];
      for (let t = first; t <= to; t += step) xs.push(t);
    } else xs = [...byTime.keys()];
    return {
      x: xs,
      series: [
        { label: `${name} (${agg})`, values: xs.map((t) => (byTime.has(t) ? byTime.get(t)! : empty)) },
      ] as Series[],
    };
  }, [ts.data, interval, agg, key, name]);
  const fmt = useMemo(() => (v: number) => formatValue(v, unit), [unit]);
  return (
    <section class="card metric-chart" aria-labelledby="metric-title">
      <h2 id="metric-title">
        {name} <span class={`badge badge-${counter ? "warn" : "neutral"}`}>{type}</span>
      </h2>
      <div class="toolbar">
        <Select
          label="Aggregation"
          value={agg}
          options={AGGREGATIONS.map((a) => ({ value: a, label: AGG_LABEL[a] }))}
          onValue={(v) => set({ agg: v === fallbackAgg ? undefined : v }, true)}
        />
        <Select
          label="Interval"
          value={interval}
          options={METRIC_INTERVALS.map((i) => ({ value: i, label: INTERVAL_LABEL[i] }))}
          onValue={(v) => set({ interval: v }, true)}
        />
        <div class="field">
          <span class="field-label">Time range</span>
          <TimeRangePicker query={query} set={(c) => set(c, true)} />
        </div>
      </div>
      <p class="metric-overall">
        <span class="muted">{AGG_LABEL[agg]} over the range: </span>
        <strong data-testid="overall">{overall.loading ? "…" : formatValue(overall.data?.value, unit)}</strong>
        {overall.data && <span class="muted"> · {formatNumber(overall.data.count)} points</span>}
      </p>
      <ErrorMessage error={overall.error} />
      <ErrorMessage error={ts.error} />
      {ts.data ? (
        <>
          <TimeChart
            title={`${name}, ${AGG_LABEL[agg].toLowerCase()} per ${INTERVAL_LABEL[interval]}`}
            x={x}
            series={series}
            kind={counter && agg === "sum" ? "bars" : "line"}
            spanGaps={agg !== "sum" && agg !== "count"}
            format={fmt}
          />
          {ts.data.buckets.length === 0 && <p class="muted">No point recorded in this range.</p>}
          <ChartTable x={x} series={series} format={fmt} />
        </>
      ) : (
        !ts.error && <div class="chart-placeholder" />
      )}
    </section>
  );
}

/** The empty state: how to record a first metric. */
function NoMetricsYet({ projectId }: { projectId: string }) {
  const curl = curlPost(`/v1/projects/${projectId}/metrics`, {
    type: "measurement",
    name: "queue.depth",
    value: 42,
    unit: "jobs",
  });
  return (
    <Empty title="No metrics yet">
      <p>
        Record a measurement (a value at a point in time) or a counter change (<code>increment</code>,{" "}
        <code>decrement</code>) with an API key from <a href={`/projects/${projectId}/keys`}>API keys</a>:
      </p>
      <pre class="curl">{curl}</pre>
      <p class="muted">
        Or <code>vigil.measure("queue.depth", 42)</code> with the SDK. Names appear here with their current value as
        soon as they are recorded.
      </p>
    </Empty>
  );
}
