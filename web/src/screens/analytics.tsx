import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { useEffect, useMemo, useState } from "preact/hooks";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { ChartTable, TimeChart, type Series } from "../ui/chart.js";
import { curlPost } from "../ui/curl.js";
import { formatNumber } from "../ui/format.js";
import { useAsync } from "../ui/hooks.js";
import { Button, CopyButton, Empty, ErrorMessage, Field, Loading, PageHeader, Select } from "../ui/kit.js";
import { FilterBuilder, filterFromQuery, filterToQuery, type Filter } from "../ui/filters.js";
import { rangeOf, TimeRangePicker, type Range } from "../ui/time-range.js";
import { useQueryState } from "../ui/url-state.js";
import { Funnel, Retention } from "./analytics-journeys.js";
import "./analytics.css";

// Analytics: a query builder over AnalyticsService whose whole query lives in the URL
// (docs/dashboard.md "Analytics"): `measure`, `field`, `interval`, `group`, `type` and the time range.
// The chart is the page's one first query (Timeseries; its buckets also give the total): event
// counts, or the chosen measure per bucket (its `aggregation`, e.g. the sum of amount per day);
// everything else (aggregates, unique values, groups with the measure, per-group series) loads
// beside it and never delays it. `view=funnel|retention` shows the journeys (analytics-journeys.tsx).

const MEASURES = [
  { value: "count", label: "Count of events" },
  { value: "unique", label: "Unique values of a field" },
  { value: "count_unique", label: "Number of distinct values" },
  { value: "sum", label: "Sum" },
  { value: "avg", label: "Average" },
  { value: "min", label: "Minimum" },
  { value: "max", label: "Maximum" },
  { value: "p50", label: "Median (p50)" },
  { value: "p75", label: "75th percentile (p75)" },
  { value: "p90", label: "90th percentile (p90)" },
  { value: "p95", label: "95th percentile (p95)" },
  { value: "p99", label: "99th percentile (p99)" },
  { value: "stddev", label: "Standard deviation" },
] as const;
type Measure = (typeof MEASURES)[number]["value"];

/** The numeric summary shown beside an aggregation (one Aggregate request for all of them). */
const SUMMARY = ["count", "sum", "avg", "min", "max", "p50", "p90", "p95", "p99"] as const;

const INTERVALS = ["minute", "hour", "day", "week", "month"] as const;
type Interval = (typeof INTERVALS)[number];
const INTERVAL_LABEL: Record<Interval, string> = {
  minute: "Per minute",
  hour: "Per hour",
  day: "Per day",
  week: "Per week",
  month: "Per month",
};

/** The interval a range gets when the URL names none: about 60-200 buckets. */
function defaultInterval(range: Range): Interval {
  const hours = (Date.parse(range.to) - Date.parse(range.from)) / 3_600_000;
  if (hours <= 3) return "minute";
  if (hours <= 8 * 24) return "hour";
  if (hours <= 120 * 24) return "day";
  if (hours <= 2 * 365 * 24) return "week";
  return "month";
}

const asValue = (v: JsonValue | undefined): Value | undefined =>
  v === undefined ? undefined : fromJson(ValueSchema, v);

const and = (...parts: (JsonValue | undefined)[]): JsonValue | undefined => {
  const xs = parts.filter((p): p is JsonValue => p !== undefined);
  return xs.length === 0 ? undefined : xs.length === 1 ? xs[0] : { and: xs };
};

const showValue = (v: JsonValue | undefined): string =>
  v === null || v === undefined ? "(none)" : typeof v === "string" ? v : JSON.stringify(v);

const formatStat = (v: number | undefined | null) =>
  v === undefined || v === null
    ? "—"
    : Number.isInteger(v)
      ? formatNumber(v)
      : v.toLocaleString(undefined, { maximumFractionDigits: Math.abs(v) < 1 ? 4 : 2 });

const axisNumber = (v: number) => formatStat(v);

/** The analytics screen's views (`view` in the URL; trends when absent). */
const VIEWS = [
  { value: "trends", label: "Trends" },
  { value: "funnel", label: "Funnel" },
  { value: "retention", label: "Retention" },
] as const;
type View = (typeof VIEWS)[number]["value"];

export function Analytics() {
  const [query, set] = useQueryState();
  const view: View = VIEWS.some((v) => v.value === query.view) ? (query.view as View) : "trends";
  return (
    <>
      <nav class="analytics-views" aria-label="Analytics views">
        {VIEWS.map((v) => (
          <a
            key={v.value}
            href={`?${new URLSearchParams(v.value === "trends" ? {} : { view: v.value }).toString()}`}
            aria-current={v.value === view ? "page" : undefined}
            onClick={(e) => {
              e.preventDefault();
              set({ view: v.value === "trends" ? undefined : v.value }, true);
            }}
          >
            {v.label}
          </a>
        ))}
      </nav>
      {view === "funnel" ? <Funnel /> : view === "retention" ? <Retention /> : <Trends />}
    </>
  );
}

function Trends() {
  const { project } = useProject();
  const [query, set] = useQueryState();
  const range = rangeOf(query, "7d");
  // A preset range is relative to now: it is computed once per query change, so a re-render does
  // not move the window (and refetch) on its own.
  // Refresh: a preset range moves up to now and every panel asks again.
  const [refreshed, setRefreshed] = useState(0);
  const key = JSON.stringify([query.range, query.from, query.to, refreshed]);
  const frozen = useMemo(() => range, [key]);
  const measure: Measure = MEASURES.some((m) => m.value === query.measure) ? (query.measure as Measure) : "count";
  const interval: Interval = INTERVALS.includes(query.interval as Interval)
    ? (query.interval as Interval)
    : defaultInterval(frozen);
  const field = (query.field ?? "").trim();
  const groupBy = (query.group ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const applied = filterFromQuery(query.filter);
  const filters = applied as unknown as JsonValue | undefined;
  const filterKey = JSON.stringify(filters ?? null);
  const time = { start: frozen.from, end: frozen.to };
  const needsField = measure !== "count";
  // The chart's measure per bucket (timeseries' `aggregation`); null: it counts events.
  const measured: Aggregate | null = needsField && field && measure !== "unique" ? { operation: measure, field } : null;
  const measureLabel = `${MEASURES.find((m) => m.value === measure)?.label ?? measure} of ${field}`;

  // The chart (and the total): the first and only request the default view makes.
  const series = useAsync(
    () =>
      api.analytics
        .timeseries({
          projectId: project.id,
          filters: asValue(filters),
          time,
          interval,
          aggregation: measured ?? undefined,
        })
        .then((r) => r.data?.buckets ?? []),
    [project.id, key, interval, filterKey, JSON.stringify(measured)],
  );
  const total = series.data?.reduce((n, b) => n + Number(b.count), 0);
  // Only when the chart counted nothing: does the project have any event at all?
  const anyEvents = useAsync(
    async () =>
      total === 0 && !filters
        ? api.events.listEvents({ projectId: project.id, limit: 1 }).then((r) => r.data.length > 0)
        : true,
    [project.id, total === 0 && !filters],
  );

  return (
    <>
      <PageHeader
        title="Analytics"
        subtitle="Count your events over time, break them down and measure their fields."
        actions={
          <>
            <Button onClick={() => setRefreshed((n) => n + 1)} busy={series.loading}>
              Refresh
            </Button>
            <CopyButton text={location.href} label="Copy link" />
          </>
        }
      />
      <div class="card query-card">
        <QueryBuilder query={query} set={set} measure={measure} interval={interval} />
        <Filters projectId={project.id} value={applied} onChange={(f) => set({ filter: filterToQuery(f) }, true)} />
      </div>
      {series.error && !series.loading && <ErrorMessage error={series.error} />}
      {anyEvents.data === false ? (
        <NoEventsYet projectId={project.id} />
      ) : (
        <>
          <section class="card" aria-labelledby="chart-title">
            <div class="chart-head">
              <h2 id="chart-title">
                {measured ? measureLabel : "Events"} {INTERVAL_LABEL[interval].toLowerCase()}
              </h2>
              <div class="stats">
                {needsField && field && measure !== "unique" && (
                  <AggregateStat projectId={project.id} measure={measure} field={field} filters={filters} time={time} />
                )}
                <div class="stat-box">
                  <span class="stat" data-testid="total">
                    {total === undefined ? "…" : formatNumber(total)}
                  </span>
                  <span class="muted">{filters ? "matching events" : "events"}</span>
                </div>
              </div>
            </div>
            <CountChart buckets={series.data} measure={measured ? measureLabel : null} />
          </section>
          {needsField && !field && (
            <p class="muted" role="status">
              Name a field (for example <code>duration</code> or <code>data.plan</code>) to compute{" "}
              {MEASURES.find((m) => m.value === measure)?.label.toLowerCase()}.
            </p>
          )}
          {measure === "unique" && field && (
            <UniqueValues projectId={project.id} field={field} filters={filters} time={time} />
          )}
          {needsField && field && measure !== "unique" && measure !== "count_unique" && (
            <Summary projectId={project.id} field={field} filters={filters} time={time} highlight={measure} />
          )}
          {groupBy.length > 0 && (
            <Groups
              projectId={project.id}
              groupBy={groupBy}
              filters={filters}
              time={time}
              interval={interval}
              chartReady={!series.loading}
              measured={measured}
              measureLabel={measureLabel}
            />
          )}
        </>
      )}
    </>
  );
}

function QueryBuilder(props: {
  query: Record<string, string>;
  set: (changes: Record<string, string | undefined>, push?: boolean) => void;
  measure: Measure;
  interval: Interval;
}) {
  const { query, set, measure, interval } = props;
  // Text inputs apply on Enter or "Apply" (not on every keystroke: each change is a query).
  const [field, setField] = useState(query.field ?? "");
  const [group, setGroup] = useState(query.group ?? "");
  useEffect(() => {
    setField(query.field ?? "");
    setGroup(query.group ?? "");
  }, [query.field, query.group]);
  const dirty = field !== (query.field ?? "") || group !== (query.group ?? "");
  return (
    <form
      class="query-builder"
      aria-label="Query"
      onSubmit={(e) => {
        e.preventDefault();
        set({ field: field.trim(), group: group.trim() }, true);
      }}
    >
      <div class="toolbar">
        <Select
          label="Measure"
          value={measure}
          options={MEASURES}
          onValue={(v) =>
            set({ measure: v === "count" ? undefined : v, field: v === "count" ? undefined : field }, true)
          }
        />
        {measure !== "count" && (
          <Field
            label="Field to measure"
            name="field"
            value={field}
            onValue={setField}
            placeholder="amount"
            title="A key of the events' data (amount, data.cart.total), or context.*, tags.*, userId"
            spellcheck={false}
            autoComplete="off"
          />
        )}
        <Field
          label="Group by"
          name="group"
          value={group}
          onValue={setGroup}
          placeholder="plan, country"
          title="Fields separated by commas: type, userId, plan, context.os…"
          spellcheck={false}
          autoComplete="off"
        />
        <Button variant={dirty ? "primary" : "secondary"} type="submit">
          Apply
        </Button>
        <Select
          label="Interval"
          value={interval}
          options={INTERVALS.map((i) => ({ value: i, label: INTERVAL_LABEL[i] }))}
          onValue={(v) => set({ interval: v }, true)}
        />
        <div class="field">
          <span class="field-label" aria-hidden="true">
            Time range
          </span>
          <TimeRangePicker query={query} set={(c) => set(c, true)} fallback="7d" />
        </div>
      </div>
    </form>
  );
}

/**
 * The filter builder (ui/filters.tsx), mounted when a filter is applied or the person asks for
 * one: it reads the project's field suggestions (two requests), which the default view, whose
 * only request is the chart's, does without.
 */
function Filters(props: { projectId: string; value: Filter | undefined; onChange: (f: Filter | undefined) => void }) {
  const [open, setOpen] = useState(false);
  if (!open && !props.value)
    return (
      <div class="filters-closed">
        <Button onClick={() => setOpen(true)}>+ Filter events</Button>
        <span class="muted">Every event counts.</span>
      </div>
    );
  return (
    <FilterBuilder
      projectId={props.projectId}
      value={props.value}
      onChange={(f) => {
        if (!f) setOpen(false);
        props.onChange(f);
      }}
    />
  );
}

/** The chart's measure: an aggregate operation over a field (timeseries' and group's aggregation). */
interface Aggregate {
  operation: string;
  field: string;
}

/** The chart: event counts as bars, or (`measure`: its label) the measure's value per bucket as a line. */
function CountChart({
  buckets,
  measure,
}: {
  buckets: { time: string; count: bigint; value?: number }[] | undefined;
  measure: string | null;
}) {
  const x = useMemo(() => (buckets ?? []).map((b) => Date.parse(b.time) / 1000), [buckets]);
  const series = useMemo<Series[]>(
    () => [
      measure
        ? { label: measure, values: (buckets ?? []).map((b) => b.value ?? null) }
        : { label: "Events", values: (buckets ?? []).map((b) => Number(b.count)) },
    ],
    [buckets, measure],
  );
  if (!buckets) return <div class="chart-placeholder" />;
  return (
    <>
      <TimeChart
        title={measure ? `${measure} over time` : "Events over time"}
        x={x}
        series={series}
        kind={measure ? "line" : "bars"}
        spanGaps={!!measure}
        format={axisNumber}
      />
      <ChartTable x={x} series={series} format={axisNumber} />
    </>
  );
}

/** Shown when the project has no event at all. */
function NoEventsYet({ projectId }: { projectId: string }) {
  const curl = curlPost("/v1/events", { type: "signup", userId: "u1", data: { plan: "pro", duration: 120 } });
  return (
    <Empty title="No events yet">
      <p>
        Analytics counts the events your apps send. Create an API key in{" "}
        <a href={`/projects/${projectId}/keys`}>API keys</a>, then send a first event:
      </p>
      <pre class="curl">{curl}</pre>
    </Empty>
  );
}

function AggregateStat(props: {
  projectId: string;
  measure: Measure;
  field: string;
  filters: JsonValue | undefined;
  time: { start: string; end: string };
}) {
  const { projectId, measure, field, filters, time } = props;
  const r = useAsync(
    () =>
      api.analytics
        .aggregate({
          projectId,
          filters: asValue(filters),
          time,
          aggregations: [{ name: "value", field, operation: measure }],
        })
        .then((a) => a.data?.results[0]?.value),
    [projectId, measure, field, JSON.stringify(filters ?? null), time.start, time.end],
  );
  const label = MEASURES.find((m) => m.value === measure)?.label ?? measure;
  return (
    <div class="stat-box" title={r.error}>
      <span class="stat" data-testid="measure">
        {r.loading ? "…" : r.error ? "—" : formatStat(r.data)}
      </span>
      <span class="muted">
        {label.replace(/ \(p\d+\)$/, "")} of <code>{field}</code>
        {!r.loading && !r.error && r.data === undefined && " (no numeric value)"}
      </span>
      {r.error && <ErrorMessage error={r.error} />}
    </div>
  );
}

/** Every numeric statistic of the field at once (one Aggregate request). */
function Summary(props: {
  projectId: string;
  field: string;
  filters: JsonValue | undefined;
  time: { start: string; end: string };
  highlight: Measure;
}) {
  const { projectId, field, filters, time } = props;
  const r = useAsync(
    () =>
      api.analytics
        .aggregate({
          projectId,
          filters: asValue(filters),
          time,
          aggregations: SUMMARY.map((op) => ({ name: op, field, operation: op })),
        })
        .then((a) => a.data?.results ?? []),
    [projectId, field, JSON.stringify(filters ?? null), time.start, time.end],
  );
  return (
    <section class="card" aria-labelledby="summary-title">
      <h2 id="summary-title">
        Summary of <code>{field}</code>
      </h2>
      {r.error && <ErrorMessage error={r.error} />}
      {r.loading && !r.data && <Loading />}
      {r.data && (
        <table aria-labelledby="summary-title">
          <thead>
            <tr>
              {r.data.map((x) => (
                <th key={x.name} class={`num${x.name === props.highlight ? " chosen" : ""}`} scope="col">
                  {x.name === "count" ? "events with it" : x.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            <tr>
              {r.data.map((x) => (
                <td key={x.name} class={`num${x.name === props.highlight ? " chosen" : ""}`}>
                  {formatStat(x.value)}
                </td>
              ))}
            </tr>
          </tbody>
        </table>
      )}
    </section>
  );
}

function UniqueValues(props: {
  projectId: string;
  field: string;
  filters: JsonValue | undefined;
  time: { start: string; end: string };
}) {
  const { projectId, field, filters, time } = props;
  const r = useAsync(
    () =>
      api.analytics.unique({ projectId, filters: asValue(filters), time, field, limit: 100n }).then((u) =>
        (u.data?.values ?? []).map((v) => ({
          value: v.value ? toJson(ValueSchema, v.value) : null,
          count: Number(v.count),
        })),
      ),
    [projectId, field, JSON.stringify(filters ?? null), time.start, time.end],
  );
  const max = Math.max(1, ...(r.data ?? []).map((v) => v.count));
  return (
    <section class="card" aria-labelledby="unique-title">
      <h2 id="unique-title">
        Values of <code>{field}</code>
      </h2>
      {r.error && <ErrorMessage error={r.error} />}
      {r.loading && !r.data && <Loading />}
      {r.data && r.data.length === 0 && (
        <p class="muted">
          No event in this range has <code>{field}</code>. Field names are the keys of an event's <code>data</code> (or{" "}
          <code>type</code>, <code>userId</code>, <code>context.*</code>, <code>tags.*</code>).
        </p>
      )}
      {r.data && r.data.length > 0 && (
        <>
          <p class="muted">
            {r.data.length === 100 ? "The 100 most frequent values" : `${r.data.length} distinct values`}, most frequent
            first.
          </p>
          <table aria-labelledby="unique-title">
            <thead>
              <tr>
                <th scope="col">Value</th>
                <th scope="col" class="num">
                  Events
                </th>
                <th scope="col" class="bar-col">
                  <span class="visually-hidden">Share</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {r.data.map((v) => (
                <tr key={showValue(v.value)}>
                  <td>
                    <code>{showValue(v.value)}</code>
                  </td>
                  <td class="num">{formatNumber(v.count)}</td>
                  <td class="bar-col">
                    <Bar share={v.count / max} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

const Bar = ({ share }: { share: number }) => (
  <span class="bar" aria-hidden="true">
    <span style={{ width: `${Math.max(1, Math.round(share * 100))}%` }} />
  </span>
);

/** How many of the top groups get their own series in the group chart. */
const TOP_SERIES = 5;

function Groups(props: {
  projectId: string;
  groupBy: string[];
  filters: JsonValue | undefined;
  time: { start: string; end: string };
  interval: Interval;
  chartReady: boolean;
  /** The chosen measure: a column of the table (group's `aggregations`) and the per-group series' value. */
  measured: Aggregate | null;
  measureLabel: string;
}) {
  const { projectId, groupBy, filters, time, interval, measured } = props;
  const fkey = JSON.stringify(filters ?? null);
  // The measure's key in each group object: any name but `count` and the group-by fields.
  const mkey = groupBy.includes("value") ? "measure_value" : "value";
  const r = useAsync(
    () =>
      api.analytics
        .group({
          projectId,
          filters: asValue(filters),
          time,
          groupBy,
          limit: 100n,
          aggregations: measured ? [{ name: mkey, ...measured }] : [],
        })
        .then((g) => g.data?.groups ?? []),
    [projectId, groupBy.join(","), fkey, time.start, time.end, JSON.stringify(measured)],
  );
  const rows = r.data ?? [];
  const sum = rows.reduce((n, g) => n + Number(g.count ?? 0), 0);
  const max = Math.max(1, ...rows.map((g) => Number(g.count ?? 0)));
  // A series per top group: its own Timeseries with the group's values as a filter, asked once
  // the main chart is drawn (they never compete with it). Groups with a missing value are left out.
  const top = rows.filter((g) => groupBy.every((f) => g[f] !== null && g[f] !== undefined)).slice(0, TOP_SERIES);
  const per = useAsync(async () => {
    if (!props.chartReady || top.length === 0) return undefined;
    const answers = await Promise.all(
      top.map((g) =>
        api.analytics.timeseries({
          projectId,
          time,
          interval,
          aggregation: measured ?? undefined,
          filters: asValue(
            and(filters, ...groupBy.map((f) => ({ field: f, operator: "equals", value: g[f] ?? null }) as JsonValue)),
          ),
        }),
      ),
    );
    const x = (answers[0].data?.buckets ?? []).map((b) => Date.parse(b.time) / 1000);
    const series: Series[] = answers.map((a, i) => ({
      label: groupBy.map((f) => showValue(top[i][f])).join(" · "),
      values: (a.data?.buckets ?? []).map((b) => (measured ? (b.value ?? null) : Number(b.count))),
    }));
    return { x, series };
  }, [props.chartReady, JSON.stringify(top), interval, time.start, time.end, JSON.stringify(measured)]);
  const title = `${measured ? props.measureLabel : "Events"} by ${groupBy.join(", ")}`;
  return (
    <section class="card" aria-labelledby="groups-title">
      <h2 id="groups-title">{title}</h2>
      {r.error && <ErrorMessage error={r.error} />}
      {r.loading && !r.data && <Loading />}
      {r.data && rows.length === 0 && <p class="muted">No events in this range.</p>}
      {per.data && per.data.series.length > 0 && (
        <TimeChart title={`${title}, top ${per.data.series.length}`} x={per.data.x} series={per.data.series} />
      )}
      {per.error && <ErrorMessage error={per.error} />}
      {rows.length > 0 && (
        <table aria-labelledby="groups-title" class="groups">
          <thead>
            <tr>
              {groupBy.map((f) => (
                <th key={f} scope="col">
                  {f}
                </th>
              ))}
              <th scope="col" class="num">
                Events
              </th>
              {measured && (
                <th scope="col" class="num chosen">
                  {props.measureLabel}
                </th>
              )}
              <th scope="col" class="num">
                Share
              </th>
              <th scope="col" class="bar-col">
                <span class="visually-hidden">Bar</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((g, i) => (
              <tr key={i}>
                {groupBy.map((f) => (
                  <td key={f}>
                    <code>{showValue(g[f] ?? null)}</code>
                  </td>
                ))}
                <td class="num">{formatNumber(Number(g.count ?? 0))}</td>
                {measured && (
                  <td class="num chosen">{formatStat(typeof g[mkey] === "number" ? (g[mkey] as number) : null)}</td>
                )}
                <td class="num">{sum ? `${((100 * Number(g.count ?? 0)) / sum).toFixed(1)}%` : "—"}</td>
                <td class="bar-col">
                  <Bar share={Number(g.count ?? 0) / max} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {rows.length === 100 && <p class="muted">The 100 largest groups are shown.</p>}
    </section>
  );
}
