import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { useLocation, useRoute } from "preact-iso";
import { useEffect, useMemo, useState } from "preact/hooks";
import type { Alert, AlertEvaluation } from "../../../gen/vigil/v1/alerts_pb.js";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { ChartTable, TimeChart, type Band, type Series } from "../ui/chart.js";
import { filterFromQuery, FilterBuilder, type Filter } from "../ui/filters.js";
import { formatDuration, formatNumber, formatTime, timeAgo } from "../ui/format.js";
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
import { rangeOf, TimeRangePicker, type Preset } from "../ui/time-range.js";
import { useQueryState } from "../ui/url-state.js";
import "./alerts.css";

// Alerts (docs/alerts.md): the project's rules with their state and last value (ListAlerts, read
// again every 2 s); the rule editor, whose preview (PreviewAlert) draws the series, the threshold and
// resolve lines and the incidents the rule would have opened over the chosen range before anything
// is saved; and an alert's page: its rule, recent evaluations (ListAlertEvaluations) and the
// incidents of the monitor it owns (uptime's ListIncidents). The editor's draft lives in the URL
// (`new=1` or `edit=1`, `draft=<json>`, `range`), like every query a person builds.

// ---------------------------------------------------------------------------------------------
// The rule as the editor holds it: text as typed (a half-typed number is not lost), read by toRule.

const OPERATORS = { gt: ">", gte: "≥", lt: "<", lte: "≤" } as const;
type Operator = keyof typeof OPERATORS;
const SOURCES = {
  metric: "A metric",
  events: "An events aggregate",
  ratio: "A ratio of two event counts",
} as const;
type Source = keyof typeof SOURCES;
const NO_DATA = {
  ok: "Counts as not holding (ok)",
  alerting: "Counts as holding (alerting)",
  keep: "Changes nothing (keep)",
} as const;
type NoData = keyof typeof NO_DATA;
const METRIC_AGGREGATIONS = ["", "avg", "sum", "count", "min", "max", "p50", "p75", "p90", "p95", "p99"] as const;
const EVENT_OPERATIONS = ["count", "count_unique", "sum", "avg", "min", "max", "stddev", "p50", "p90", "p95", "p99"];

interface Draft {
  name: string;
  source: Source;
  metric: string;
  aggregation: string;
  filters?: Filter;
  operation: string;
  field: string;
  numerator?: Filter;
  denominator?: Filter;
  operator: Operator;
  value: string;
  window: string;
  every: string;
  for: string;
  resolve: boolean;
  resolveOperator: Operator;
  resolveValue: string;
  resolveFor: string;
  noData: NoData;
  minSamples: string;
  /** A funnel or retention query (docs/alerts.md), which this editor shows but does not edit: saved as it is. */
  kept?: Json;
}

const NEW_DRAFT: Draft = {
  name: "",
  source: "metric",
  metric: "",
  aggregation: "",
  operation: "count",
  field: "",
  operator: "gt",
  value: "",
  window: "5m",
  every: "1m",
  for: "0s",
  resolve: false,
  resolveOperator: "lt",
  resolveValue: "",
  resolveFor: "0s",
  noData: "ok",
  minSamples: "1",
};

const UNITS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** "30s", "5m", "1.5h", "1d" (a bare number is seconds) in milliseconds; undefined if not one. */
function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$/.exec(text);
  return m ? Math.round(Number(m[1]) * UNITS[(m[2] ?? "s") as keyof typeof UNITS]) : undefined;
}

/** Milliseconds as the editor writes them: the largest unit that divides them. */
function durationText(ms: number): string {
  for (const u of ["d", "h", "m"] as const) if (ms > 0 && ms % UNITS[u] === 0) return `${ms / UNITS[u]}${u}`;
  return `${ms / 1000}s`;
}

type Json = { [k: string]: JsonValue };
interface Rule {
  query: Json;
  condition: { operator: Operator; value: number };
  windowMs: number;
  everyMs: number;
  forMs: number;
  resolve: { operator: Operator; value: number; forMs: number } | null;
  noData: NoData;
  minSamples: number;
}

/** The rule a draft says, or the first problem in words (keyed by the request field it concerns). */
function toRule(d: Draft): { rule: Rule } | { field: string; problem: string } {
  const num = (s: string) => (s.trim() === "" ? NaN : Number(s));
  const filters = (f: Filter | undefined): Json => (f ? { filters: f as unknown as JsonValue } : {});
  let query: Json;
  if (d.kept) query = d.kept;
  else if (d.source === "metric") {
    if (!d.metric.trim()) return { field: "query.name", problem: "Choose a metric." };
    query = { source: "metric", name: d.metric.trim(), ...(d.aggregation ? { aggregation: d.aggregation } : {}) };
  } else if (d.source === "events") {
    query = {
      source: "events",
      ...filters(d.filters),
      operation: d.operation,
      ...(d.operation !== "count" && d.field.trim() ? { field: d.field.trim() } : {}),
    };
  } else query = { source: "ratio", numerator: filters(d.numerator), denominator: filters(d.denominator) };
  const value = num(d.value);
  if (!Number.isFinite(value)) return { field: "condition.value", problem: "A number is required." };
  const durations = { windowMs: d.window, everyMs: d.every, forMs: d.for } as const;
  const ms: Record<string, number> = {};
  for (const [field, text] of Object.entries(durations)) {
    const v = parseDuration(text);
    if (v === undefined) return { field, problem: "A duration such as 30s, 5m, 1h or 1d." };
    ms[field] = v;
  }
  let resolve: Rule["resolve"] = null;
  if (d.resolve) {
    const rv = num(d.resolveValue);
    if (!Number.isFinite(rv)) return { field: "resolve.value", problem: "A number is required." };
    const rf = parseDuration(d.resolveFor);
    if (rf === undefined) return { field: "resolve.forMs", problem: "A duration such as 30s, 5m, 1h or 1d." };
    resolve = { operator: d.resolveOperator, value: rv, forMs: rf };
  }
  const minSamples = num(d.minSamples);
  if (!Number.isInteger(minSamples)) return { field: "minSamples", problem: "A whole number is required." };
  return {
    rule: {
      query,
      condition: { operator: d.operator, value },
      windowMs: ms.windowMs,
      everyMs: ms.everyMs,
      forMs: ms.forMs,
      resolve,
      noData: d.noData,
      minSamples,
    },
  };
}

/** An alert as a draft (the editor of an existing alert starts from it). */
function draftOf(a: Alert): Draft {
  const q = (a.query?.kind.case === "structValue" ? toPlain(a.query) : {}) as Record<string, unknown>;
  const side = (k: string) => filterFromQuery(JSON.stringify((q[k] as { filters?: unknown } | undefined)?.filters));
  return {
    ...NEW_DRAFT,
    name: a.name,
    source: (q.source as Source) ?? "metric",
    metric: typeof q.name === "string" ? q.name : "",
    aggregation: typeof q.aggregation === "string" ? q.aggregation : "",
    filters: q.filters === undefined ? undefined : filterFromQuery(JSON.stringify(q.filters)),
    operation: typeof q.operation === "string" ? q.operation : "count",
    field: typeof q.field === "string" ? q.field : "",
    numerator: side("numerator"),
    denominator: side("denominator"),
    operator: (a.condition?.operator ?? "gt") as Operator,
    value: String(a.condition?.value ?? ""),
    window: durationText(Number(a.windowMs)),
    every: durationText(Number(a.everyMs)),
    for: durationText(Number(a.forMs)),
    resolve: a.resolve !== undefined,
    resolveOperator: (a.resolve?.operator ?? "lt") as Operator,
    resolveValue: a.resolve ? String(a.resolve.value) : "",
    resolveFor: durationText(Number(a.resolve?.forMs ?? 0n)),
    noData: a.noData as NoData,
    minSamples: String(a.minSamples),
    kept: q.source === "funnel" || q.source === "retention" ? (q as Json) : undefined,
  };
}

/** A google.protobuf.Value as plain JSON. */
function toPlain(v: NonNullable<Alert["query"]>): JsonValue {
  switch (v.kind.case) {
    case "structValue":
      return Object.fromEntries(Object.entries(v.kind.value.fields).map(([k, f]) => [k, toPlain(f)]));
    case "listValue":
      return v.kind.value.values.map(toPlain);
    case "numberValue":
    case "stringValue":
    case "boolValue":
      return v.kind.value;
    default:
      return null;
  }
}

/** The rule in one line: "p95 of http.latency_ms over 5m > 4000". */
function ruleText(r: { query: Record<string, unknown>; operator: string; value: number; windowMs: number }): string {
  const q = r.query;
  const what =
    q.source === "metric"
      ? `${q.aggregation ?? "default"} of ${String(q.name)}`
      : q.source === "events"
        ? `${String(q.operation)}${q.field ? ` of ${String(q.field)}` : ""} of events${q.filters ? " (filtered)" : ""}`
        : q.source === "funnel"
          ? `conversion of a ${Array.isArray(q.steps) ? q.steps.length : "?"}-step funnel`
          : q.source === "retention"
            ? `${String(q.interval)} ${String(q.period ?? 1)} retention of the newest complete cohort`
            : "numerator / denominator events";
  return `${what} over ${durationText(r.windowMs)} ${OPERATORS[r.operator as Operator] ?? r.operator} ${formatNumber(r.value)}`;
}

const alertRuleText = (a: Alert) =>
  ruleText({
    query: (a.query ? toPlain(a.query) : {}) as Record<string, unknown>,
    operator: a.condition?.operator ?? "gt",
    value: a.condition?.value ?? 0,
    windowMs: Number(a.windowMs),
  });

const formatValue = (v: number | undefined | null) =>
  v === undefined || v === null ? "—" : v.toLocaleString(undefined, { maximumFractionDigits: 4 });

/** The request fields of a rule (the RPCs take the query and resolve as google.protobuf.Value). */
function ruleFields(r: Rule) {
  return {
    query: fromJson(ValueSchema, r.query),
    condition: r.condition,
    windowMs: BigInt(r.windowMs),
    everyMs: BigInt(r.everyMs),
    forMs: BigInt(r.forMs),
    resolve: fromJson(ValueSchema, r.resolve as JsonValue),
    noData: r.noData,
    minSamples: r.minSamples,
  };
}

/**
 * The preview's range when the URL names none: the longest of the last 7 days, 24 hours or hour that
 * the rule's cadence covers in at most ~2,000 evaluations (each one a query: a 10 s cadence over a
 * day would be 8,641 of them).
 */
function previewFallback(everyMs: number | undefined): Preset {
  const fits = (ms: number) => everyMs !== undefined && everyMs > 0 && ms / everyMs <= 2100;
  return fits(7 * 86_400_000) ? "7d" : fits(86_400_000) ? "24h" : "1h";
}

/** `value`, once it has stayed the same for `ms` (a preview per pause in typing, not per key). */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

// ---------------------------------------------------------------------------------------------
// The list

export function Alerts() {
  const { project, canAdmin } = useProject();
  const [query, set] = useQueryState();
  const list = useAsync(
    () => api.alerts.listAlerts({ projectId: project.id, limit: 100 }).then((r) => r.data),
    [project.id],
  );
  useInterval(list.reload, query.new ? undefined : 2000);
  if (query.new === "1")
    return (
      <>
        <PageHeader title="New alert" subtitle="A rule over a metric or events that opens an incident." />
        <RuleEditor query={query} set={set} />
      </>
    );
  const alerts = list.data ?? [];
  return (
    <>
      <PageHeader
        title="Alerts"
        subtitle="Rules over metrics and events. A firing alert opens an incident on the monitor it owns."
        actions={
          canAdmin && (
            <Button variant="primary" onClick={() => set({ new: "1" }, true)}>
              New alert
            </Button>
          )
        }
      />
      <ErrorMessage error={list.error} />
      {!list.data && !list.error && <Loading />}
      {list.data && alerts.length === 0 && (
        <Empty title="No alerts yet">
          <p>
            An alert watches a metric (a p95 latency), an events aggregate (sign-ups per hour) or a ratio of two event
            counts (errors over requests), and opens an incident when its condition holds.{" "}
            {canAdmin
              ? "Create one with New alert: its preview shows what it would have done."
              : "Owners and admins create them."}
          </p>
        </Empty>
      )}
      {alerts.length > 0 && (
        <table class="card alert-list" aria-label="Alerts">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">State</th>
              <th scope="col" class="num">
                Last value
              </th>
              <th scope="col">Rule</th>
              <th scope="col">Evaluated</th>
            </tr>
          </thead>
          <tbody>
            {alerts.map((a) => (
              <tr key={a.id}>
                <td>
                  <a href={`/projects/${project.id}/alerts/${a.id}`}>{a.name}</a>
                </td>
                <td>
                  <StatusBadge status={a.state} />
                </td>
                <td class="num" data-testid="last-value">
                  {formatValue(a.value)}
                </td>
                <td class="muted">{alertRuleText(a)}</td>
                <td class="muted" title={formatTime(a.lastEvaluatedAt)}>
                  {a.lastEvaluatedAt ? timeAgo(a.lastEvaluatedAt) : "not yet"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

// ---------------------------------------------------------------------------------------------
// The editor and its preview

function RuleEditor(props: {
  query: Record<string, string>;
  set: (changes: Record<string, string | undefined>, push?: boolean) => void;
  /** Editing this alert (else a new one). */
  alert?: Alert;
}) {
  const { project } = useProject();
  const { query, set } = props;
  const loc = useLocation();
  const draft: Draft = useMemo(() => {
    const base = props.alert ? draftOf(props.alert) : NEW_DRAFT;
    try {
      return query.draft ? { ...base, ...(JSON.parse(query.draft) as Partial<Draft>) } : base;
    } catch {
      return base;
    }
  }, [query.draft, props.alert]);
  const change = (c: Partial<Draft>) => set({ draft: JSON.stringify({ ...draft, ...c }) });
  const metrics = useAsync(() => api.metrics.listMetrics({ projectId: project.id }).then((r) => r.data), [project.id]);
  const read = toRule(draft);
  const local = "problem" in read ? { [read.field]: read.problem } : {};
  const save = useAction();
  const cancel = () =>
    props.alert
      ? set({ edit: undefined, draft: undefined, range: undefined }, true)
      : set({ new: undefined, draft: undefined }, true);
  const onSave = async () => {
    if ("problem" in read) return;
    const r = await save.run<{ data?: Alert }>(() =>
      props.alert
        ? api.alerts.updateAlert({
            projectId: project.id,
            alertId: props.alert.id,
            name: draft.name,
            ...ruleFields(read.rule),
          })
        : api.alerts.createAlert({ projectId: project.id, name: draft.name, ...ruleFields(read.rule) }),
    );
    if (r?.data) loc.route(`/projects/${project.id}/alerts/${r.data.id}`);
  };
  const note = (field: string) => local[field];
  return (
    <form
      class="alert-editor"
      aria-label="Alert rule"
      onSubmit={(e) => {
        e.preventDefault();
        // The filter builders are forms of their own inside this one: their Apply applies a filter
        // and never saves the alert (Chromium does not bubble their submit here; the spec says it bubbles).
        if (e.target === e.currentTarget) void onSave();
      }}
    >
      <section class="card" aria-labelledby="rule-source">
        <h2 id="rule-source">What to watch</h2>
        <div class="editor-row">
          <Field
            label="Name"
            value={draft.name}
            onValue={(v) => change({ name: v })}
            field="name"
            error={save.error}
            maxLength={200}
          />
          {!draft.kept && (
            <Select
              label="Source"
              value={draft.source}
              options={Object.entries(SOURCES).map(([value, label]) => ({ value: value as Source, label }))}
              onValue={(v) => change({ source: v })}
            />
          )}
        </div>
        {draft.kept && (
          <p class="muted" role="note">
            This rule watches a {String(draft.kept.source)} (defined over the API, docs/alerts.md); its query is kept as
            it is, the fields below can be changed here.
          </p>
        )}
        {!draft.kept && draft.source === "metric" && (
          <div class="editor-row">
            <Field
              label="Metric"
              value={draft.metric}
              list="alert-metrics"
              onValue={(v) => change({ metric: v })}
              hint={note("query.name")}
            />
            <datalist id="alert-metrics">
              {(metrics.data ?? []).map((m) => (
                <option key={m.name} value={m.name} />
              ))}
            </datalist>
            <Select
              label="Aggregation"
              value={draft.aggregation}
              options={METRIC_AGGREGATIONS.map((a) => ({ value: a, label: a || "The metric type's default" }))}
              onValue={(v) => change({ aggregation: v })}
            />
          </div>
        )}
        {draft.source === "events" && (
          <>
            <FilterBuilder projectId={project.id} value={draft.filters} onChange={(f) => change({ filters: f })} />
            <div class="editor-row">
              <Select
                label="Operation"
                value={draft.operation}
                options={EVENT_OPERATIONS}
                onValue={(v) => change({ operation: v })}
              />
              {draft.operation !== "count" && (
                <Field
                  label="Field"
                  value={draft.field}
                  placeholder="data.amount"
                  onValue={(v) => change({ field: v })}
                />
              )}
            </div>
          </>
        )}
        {draft.source === "ratio" && (
          <div class="ratio-sides">
            <div role="group" aria-labelledby="alert-numerator">
              <h3 id="alert-numerator">Numerator events</h3>
              <FilterBuilder
                projectId={project.id}
                value={draft.numerator}
                onChange={(f) => change({ numerator: f })}
              />
            </div>
            <div role="group" aria-labelledby="alert-denominator">
              <h3 id="alert-denominator">Denominator events</h3>
              <FilterBuilder
                projectId={project.id}
                value={draft.denominator}
                onChange={(f) => change({ denominator: f })}
              />
            </div>
          </div>
        )}
      </section>
      <section class="card" aria-labelledby="rule-condition">
        <h2 id="rule-condition">When to fire</h2>
        <div class="editor-row">
          <Select
            label="Condition"
            value={draft.operator}
            options={Object.entries(OPERATORS).map(([value, label]) => ({ value: value as Operator, label }))}
            onValue={(v) => change({ operator: v })}
          />
          <Field
            label="Threshold"
            inputMode="decimal"
            value={draft.value}
            onValue={(v) => change({ value: v })}
            hint={note("condition.value")}
          />
          <Field
            label="Window"
            value={draft.window}
            onValue={(v) => change({ window: v })}
            hint={note("windowMs") ?? "e.g. 5m"}
          />
          <Field
            label="Every"
            value={draft.every}
            onValue={(v) => change({ every: v })}
            hint={note("everyMs") ?? "the cadence"}
          />
          <Field
            label="For"
            value={draft.for}
            onValue={(v) => change({ for: v })}
            hint={note("forMs") ?? "pending period"}
          />
        </div>
        <div class="editor-row">
          <Select
            label="No data"
            value={draft.noData}
            options={Object.entries(NO_DATA).map(([value, label]) => ({ value: value as NoData, label }))}
            onValue={(v) => change({ noData: v })}
          />
          <Field
            label={draft.source === "ratio" ? "Minimum sample (denominator events)" : "Minimum sample"}
            inputMode="numeric"
            value={draft.minSamples}
            onValue={(v) => change({ minSamples: v })}
            hint={note("minSamples") ?? "fewer observations is no data"}
          />
          <label class="check">
            <input
              type="checkbox"
              checked={draft.resolve}
              onChange={(e) => change({ resolve: (e.target as HTMLInputElement).checked })}
            />{" "}
            Resolve at another threshold
          </label>
        </div>
        {draft.resolve && (
          <div class="editor-row">
            <Select
              label="Resolve when"
              value={draft.resolveOperator}
              options={Object.entries(OPERATORS).map(([value, label]) => ({ value: value as Operator, label }))}
              onValue={(v) => change({ resolveOperator: v })}
            />
            <Field
              label="Resolve threshold"
              inputMode="decimal"
              value={draft.resolveValue}
              onValue={(v) => change({ resolveValue: v })}
              hint={note("resolve.value")}
            />
            <Field
              label="Resolve for"
              value={draft.resolveFor}
              onValue={(v) => change({ resolveFor: v })}
              hint={note("resolve.forMs")}
            />
          </div>
        )}
      </section>
      <RulePreview rule={"rule" in read ? read.rule : undefined} query={query} set={set} />
      <ErrorMessage error={save.error} />
      <div class="actions">
        <Button type="submit" variant="primary" busy={save.busy} disabled={"problem" in read}>
          {props.alert ? "Save alert" : "Create alert"}
        </Button>
        <Button onClick={cancel}>Cancel</Button>
      </div>
    </form>
  );
}

/** What the rule would have done over the range: PreviewAlert, drawn; stores and sends nothing. */
function RulePreview(props: {
  rule: Rule | undefined;
  query: Record<string, string>;
  set: (changes: Record<string, string | undefined>, push?: boolean) => void;
}) {
  const { project } = useProject();
  const { query, set } = props;
  const fallback = previewFallback(props.rule?.everyMs);
  const wanted = JSON.stringify([props.rule, query.range, query.from, query.to]);
  const settled = useSettled(wanted, 400);
  const preview = useAsync(async () => {
    if (!props.rule) return undefined;
    const range = rangeOf(query, fallback);
    const r = await api.alerts.previewAlert({
      projectId: project.id,
      ...ruleFields(props.rule),
      time: { start: range.from, end: range.to },
    });
    return { rule: props.rule, data: r.data! };
  }, [project.id, settled]);
  return (
    <section class="card" aria-labelledby="rule-preview">
      <h2 id="rule-preview">Preview</h2>
      <div class="toolbar">
        <div class="field">
          <span class="field-label">Over</span>
          <TimeRangePicker query={query} set={(c) => set(c)} fallback={fallback} />
        </div>
        {preview.loading && <span class="muted">Evaluating…</span>}
      </div>
      {!props.rule && <p class="muted">Complete the rule to see what it would have done.</p>}
      <ErrorMessage error={props.rule ? preview.error : undefined} />
      {props.rule && preview.data && (
        <EvaluationChart
          title="Preview"
          rule={preview.data.rule}
          evaluations={preview.data.data.evaluations}
          incidents={preview.data.data.incidents}
        />
      )}
    </section>
  );
}

/** Evaluations as a series with the threshold (and resolve) lines, incidents as red bands. */
function EvaluationChart(props: {
  title: string;
  rule: Pick<Rule, "condition" | "resolve">;
  /** Oldest first. */
  evaluations: AlertEvaluation[];
  incidents: { startedAt: string; endedAt?: string }[];
  /**
   * The least span drawn, ending at the last evaluation (a young alert's few evaluations would
   * otherwise be a lone point on an axis of years, without its threshold lines).
   */
  minSpanMs?: number;
}) {
  const { x, series, bands, table } = useMemo(() => {
    const at = props.evaluations.map((e) => Date.parse(e.at) / 1000);
    const values = props.evaluations.map((e) => e.value ?? null);
    const start = at.length && props.minSpanMs ? at[at.length - 1] - props.minSpanMs / 1000 : undefined;
    const early = start !== undefined && start < at[0];
    const xs = early ? [start, ...at] : at;
    const s: Series[] = [
      { label: "Value", values: early ? [null, ...values] : values },
      {
        label: `Threshold ${OPERATORS[props.rule.condition.operator]} ${formatNumber(props.rule.condition.value)}`,
        values: xs.map(() => props.rule.condition.value),
        reference: { color: "#dc2626" },
      },
    ];
    if (props.rule.resolve)
      s.push({
        label: `Resolve ${OPERATORS[props.rule.resolve.operator]} ${formatNumber(props.rule.resolve.value)}`,
        values: xs.map(() => props.rule.resolve!.value),
        reference: { color: "#15803d" },
      });
    const b: Band[] = props.incidents.map((i) => ({
      from: Date.parse(i.startedAt) / 1000,
      to: i.endedAt ? Date.parse(i.endedAt) / 1000 : null,
    }));
    return { x: xs, series: s, bands: b, table: { x: at, series: [{ label: "Value", values }] } };
  }, [props.evaluations, props.incidents, props.rule, props.minSpanMs]);
  const withData = props.evaluations.filter((e) => e.value !== undefined).length;
  return (
    <>
      <p class="preview-summary" data-testid="preview-summary">
        <strong>
          {props.incidents.length === 1 ? "1 incident" : `${formatNumber(props.incidents.length)} incidents`}
        </strong>{" "}
        over {formatNumber(props.evaluations.length)} evaluation{props.evaluations.length === 1 ? "" : "s"}
        {withData < props.evaluations.length && ` (${formatNumber(props.evaluations.length - withData)} without data)`}
      </p>
      <TimeChart
        title={`${props.title}: value, threshold and incidents`}
        x={x}
        series={series}
        bands={bands}
        spanGaps={false}
        format={formatValue}
      />
      {props.incidents.length > 0 && (
        <ul class="preview-incidents" aria-label={`${props.title} incidents`}>
          {props.incidents.map((i) => (
            <li key={i.startedAt}>
              <span class="band-key" aria-hidden="true" /> {formatTime(i.startedAt)} –{" "}
              {i.endedAt ? formatTime(i.endedAt) : "still open"}
              {i.endedAt && (
                <span class="muted"> ({formatDuration(Date.parse(i.endedAt) - Date.parse(i.startedAt))})</span>
              )}
            </li>
          ))}
        </ul>
      )}
      <ChartTable x={table.x} series={table.series} format={formatValue} />
    </>
  );
}

// ---------------------------------------------------------------------------------------------
// An alert's page

export function AlertDetail() {
  const { project, canAdmin } = useProject();
  const { params } = useRoute();
  const loc = useLocation();
  const [query, set] = useQueryState();
  const q = { projectId: project.id, alertId: params.alertId };
  const alert = useAsync(() => api.alerts.getAlert(q).then((r) => r.data), [project.id, params.alertId]);
  const a = alert.data;
  const evaluations = useAsync(
    () => api.alerts.listAlertEvaluations({ ...q, limit: 200 }).then((r) => r.data),
    [project.id, params.alertId],
  );
  const incidents = useAsync(
    () =>
      a
        ? api.uptime.listIncidents({ projectId: project.id, monitorId: a.monitorId, limit: 50 }).then((r) => r.data)
        : Promise.resolve(undefined),
    [project.id, a?.monitorId],
  );
  const editing = query.edit === "1";
  useInterval(
    () => {
      alert.reload();
      evaluations.reload();
      incidents.reload();
    },
    editing ? undefined : 2000,
  );
  const act = useAction();
  if (alert.error && !a) return <ErrorMessage error={alert.error} />;
  if (!a) return <Loading />;
  if (editing)
    return (
      <>
        <PageHeader title={`Edit ${a.name}`} />
        <RuleEditor query={query} set={set} alert={a} />
      </>
    );
  const rule: Pick<Rule, "condition" | "resolve"> = {
    condition: { operator: (a.condition?.operator ?? "gt") as Operator, value: a.condition?.value ?? 0 },
    resolve: a.resolve
      ? { operator: a.resolve.operator as Operator, value: a.resolve.value, forMs: Number(a.resolve.forMs) }
      : null,
  };
  const oldestFirst = [...(evaluations.data ?? [])].reverse();
  const since = oldestFirst[0] ? Date.parse(oldestFirst[0].at) : Infinity;
  const shown = (incidents.data ?? []).filter((i) => !i.endedAt || Date.parse(i.endedAt) >= since);
  const monitorQ = { projectId: project.id, monitorId: a.monitorId };
  return (
    <>
      <PageHeader
        title={
          <>
            {a.name} <StatusBadge status={a.state} />
          </>
        }
        subtitle={alertRuleText(a)}
        actions={
          canAdmin && (
            <>
              <Button onClick={() => set({ edit: "1" }, true)}>Edit rule</Button>
              {a.state === "paused" ? (
                <Button
                  busy={act.busy}
                  onClick={async () => (await act.run(() => api.uptime.resumeMonitor(monitorQ))) && alert.reload()}
                >
                  Resume
                </Button>
              ) : (
                <Button
                  busy={act.busy}
                  onClick={async () => (await act.run(() => api.uptime.pauseMonitor(monitorQ))) && alert.reload()}
                >
                  Pause
                </Button>
              )}
              <ConfirmButton
                label="Delete"
                busy={act.busy}
                onConfirm={async () => {
                  if (await act.run(() => api.alerts.deleteAlert(q))) loc.route(`/projects/${project.id}/alerts`);
                }}
              />
            </>
          )
        }
      />
      <ErrorMessage error={act.error} />
      <section class="card" aria-labelledby="alert-facts">
        <h2 id="alert-facts" class="visually-hidden">
          State
        </h2>
        <dl class="alert-facts">
          <div>
            <dt>Last value</dt>
            <dd data-testid="alert-value">{formatValue(a.value)}</dd>
          </div>
          <div>
            <dt>Evaluated</dt>
            <dd title={formatTime(a.lastEvaluatedAt)}>{a.lastEvaluatedAt ? timeAgo(a.lastEvaluatedAt) : "not yet"}</dd>
          </div>
          <div>
            <dt>Every</dt>
            <dd>{durationText(Number(a.everyMs))}</dd>
          </div>
          <div>
            <dt>Pending for</dt>
            <dd>{durationText(Number(a.forMs))}</dd>
          </div>
          <div>
            <dt>Resolves</dt>
            <dd>
              {a.resolve
                ? `${OPERATORS[a.resolve.operator as Operator] ?? a.resolve.operator} ${formatNumber(a.resolve.value)} for ${durationText(Number(a.resolve.forMs))}`
                : "when the condition no longer holds"}
            </dd>
          </div>
          <div>
            <dt>No data</dt>
            <dd>{NO_DATA[a.noData as NoData] ?? a.noData}</dd>
          </div>
          <div>
            <dt>Monitor</dt>
            <dd>
              <a href={`/projects/${project.id}/uptime/${a.monitorId}`}>{a.slug}</a>
            </dd>
          </div>
        </dl>
      </section>
      <section class="card" aria-labelledby="alert-incidents">
        <h2 id="alert-incidents">Incidents</h2>
        <ErrorMessage error={incidents.error} />
        {!incidents.data ? (
          !incidents.error && <Loading />
        ) : incidents.data.length === 0 ? (
          <p class="muted">No incidents. One opens when the condition has held for the pending period.</p>
        ) : (
          <ul class="alert-incidents" aria-label="Incidents">
            {incidents.data.map((i) => (
              <li key={i.id}>
                <StatusBadge status={i.status} />{" "}
                {i.title ?? `${a.name} ${i.status === "open" ? "is firing" : "fired"}`}
                <span class="muted">
                  {" "}
                  · started {formatTime(i.startedAt)}
                  {i.endedAt
                    ? ` · resolved ${formatTime(i.endedAt)} (${formatDuration(i.durationMs)})`
                    : ` · ongoing for ${formatDuration(Date.now() - Date.parse(i.startedAt))}`}
                </span>
              </li>
            ))}
          </ul>
        )}
        <p class="muted">
          Titles, descriptions and updates are edited on{" "}
          <a href={`/projects/${project.id}/uptime/${a.monitorId}`}>the monitor's page</a>.
        </p>
      </section>
      <section class="card" aria-labelledby="alert-evaluations">
        <h2 id="alert-evaluations">Recent evaluations</h2>
        <ErrorMessage error={evaluations.error} />
        {evaluations.data && oldestFirst.length === 0 && <p class="muted">No evaluation yet.</p>}
        {oldestFirst.length > 0 && (
          <EvaluationChart
            title="Recent evaluations"
            rule={rule}
            evaluations={oldestFirst}
            incidents={shown}
            minSpanMs={30 * Number(a.everyMs)}
          />
        )}
      </section>
    </>
  );
}
