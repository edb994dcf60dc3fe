import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { useMemo, useState } from "preact/hooks";
import { api } from "../api.js";
import { useProject } from "../session.js";
import { formatDuration, formatNumber, formatPercent } from "../ui/format.js";
import { useAsync } from "../ui/hooks.js";
import { Button, ErrorMessage, Loading, Select } from "../ui/kit.js";
import {
  FilterBuilder,
  filterFromQuery,
  filterToQuery,
  filterToValue,
  type Filter,
  type FilterNode,
} from "../ui/filters.js";
import { rangeOf, TimeRangePicker, type Preset } from "../ui/time-range.js";
import { useQueryState } from "../ui/url-state.js";

// The analytics screen's journeys (docs/dashboard.md "Analytics"; decisions.md "Analytics, third
// round"): a funnel (2-10 steps, each a filter of the filter builder, a conversion window; bars
// with the actors, conversion and drop-off of each step) and a retention grid (start and return
// filters, interval, periods; a row per cohort with its size and a shaded matrix). The whole query
// lives in the URL: `steps` (a JSON array of filters), `window`; `start`, `return`, `cohort`,
// `periods`; the time range.

const MIN_STEPS = 2;
const MAX_STEPS = 10;

const WINDOWS = [
  { value: "3600000", label: "1 hour" },
  { value: "86400000", label: "1 day" },
  { value: "604800000", label: "7 days" },
  { value: "2592000000", label: "30 days" },
] as const;
type WindowMs = (typeof WINDOWS)[number]["value"];

const COHORTS = ["day", "week", "month"] as const;
type Cohort = (typeof COHORTS)[number];
const COHORT_LABEL: Record<Cohort, string> = { day: "Day", week: "Week", month: "Month" };
const PERIODS = ["4", "8", "12", "30"] as const;
type Periods = (typeof PERIODS)[number];

/** The funnel's steps from the URL: at least two, at most ten (a step without filter: undefined). */
function stepsOf(text: string | undefined): (Filter | undefined)[] {
  let xs: unknown[] = [];
  try {
    const v: unknown = JSON.parse(text ?? "[]");
    if (Array.isArray(v)) xs = v;
  } catch {
    // a hand-edited address: start over
  }
  const steps = xs.slice(0, MAX_STEPS).map((x) => (x ? filterFromQuery(JSON.stringify(x)) : undefined));
  while (steps.length < MIN_STEPS) steps.push(undefined);
  return steps;
}

const stepsToQuery = (steps: (Filter | undefined)[]) => JSON.stringify(steps.map((s) => s ?? null));

/** A filter in a few words: "type = signup", "plan in pro, team and type = purchase". */
function describe(f: Filter | undefined): string {
  if (!f) return "every event";
  const node = (n: FilterNode): string => {
    if ("and" in n) return n.and.map(node).join(" and ");
    if ("or" in n) return `(${n.or.map(node).join(" or ")})`;
    const v = Array.isArray(n.value) ? n.value.join(", ") : String(n.value ?? "");
    return `${n.field} ${n.operator === "equals" ? "=" : n.operator}${v ? ` ${v}` : ""}`;
  };
  return node(f);
}

/** The time range of a journey view: the picker's, relative ranges computed once per change. */
function useRange(query: Record<string, string>, fallback: Preset) {
  const range = rangeOf(query, fallback);
  const key = JSON.stringify([query.range, query.from, query.to]);
  return useMemo(() => ({ start: range.from, end: range.to }), [key]);
}

export function Funnel() {
  const { project } = useProject();
  const [query, set] = useQueryState();
  const steps = stepsOf(query.steps);
  const windowMs: WindowMs = WINDOWS.some((w) => w.value === query.window) ? (query.window as WindowMs) : "86400000";
  const time = useRange(query, "7d");
  const ready = steps.every((s) => s !== undefined);
  const stepsKey = stepsToQuery(steps);
  const setStep = (i: number, f: Filter | undefined) =>
    set({ steps: stepsToQuery(steps.map((s, k) => (k === i ? f : s))) }, true);
  const r = useAsync(
    async () =>
      ready
        ? api.analytics
            .funnel({
              projectId: project.id,
              steps: steps.map((s) => ({ filters: filterToValue(s) })),
              time,
              windowMs: BigInt(windowMs),
              actor: "userId",
            })
            .then((a) => a.data?.steps ?? [])
        : undefined,
    [project.id, stepsKey, windowMs, time.start, time.end],
  );
  const counts = (r.data ?? []).map((x) => Number(x.count));
  const first = Math.max(1, counts[0] ?? 0);
  return (
    <>
      <div class="card query-card">
        <div class="toolbar">
          <Select
            label="Conversion window"
            value={windowMs}
            options={WINDOWS}
            onValue={(v) => set({ window: v === "86400000" ? undefined : v }, true)}
          />
          <div class="field">
            <span class="field-label" aria-hidden="true">
              Time range (first step)
            </span>
            <TimeRangePicker query={query} set={(c) => set(c, true)} fallback="7d" />
          </div>
        </div>
        <ol class="funnel-steps">
          {steps.map((s, i) => (
            <li key={i}>
              <section class="funnel-step" aria-label={`Step ${i + 1}`}>
                <div class="step-head">
                  <h3>Step {i + 1}</h3>
                  {steps.length > MIN_STEPS && (
                    <Button
                      onClick={() => set({ steps: stepsToQuery(steps.filter((_, k) => k !== i)) }, true)}
                      aria-label={`Remove step ${i + 1}`}
                    >
                      Remove
                    </Button>
                  )}
                </div>
                <FilterBuilder projectId={project.id} value={s} onChange={(f) => setStep(i, f)} />
              </section>
            </li>
          ))}
        </ol>
        {steps.length < MAX_STEPS && (
          <Button onClick={() => set({ steps: stepsToQuery([...steps, undefined]) }, true)}>+ Step</Button>
        )}
      </div>
      <section class="card" aria-labelledby="funnel-title">
        <h2 id="funnel-title">Funnel</h2>
        <p class="muted">
          Users (<code>userId</code>) who did each step in order within{" "}
          {WINDOWS.find((w) => w.value === windowMs)?.label} of their first step, which falls in the time range.
        </p>
        {!ready && (
          <p class="muted" role="status">
            Give every step a filter (for example <code>type</code> equals <code>signup</code>).
          </p>
        )}
        {r.error && <ErrorMessage error={r.error} />}
        {r.loading && !r.data && ready && <Loading />}
        {r.data && (
          <table aria-labelledby="funnel-title" class="funnel">
            <thead>
              <tr>
                <th scope="col">Step</th>
                <th scope="col" class="num">
                  Users
                </th>
                <th scope="col" class="num">
                  Conversion
                </th>
                <th scope="col" class="num">
                  Drop-off
                </th>
                <th scope="col" class="num">
                  Median time
                </th>
                <th scope="col" class="bar-col">
                  <span class="visually-hidden">Bar</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {r.data.map((x, i) => {
                const dropped = i === 0 ? null : counts[i - 1] - counts[i];
                return (
                  <tr key={i}>
                    <td>
                      {i + 1}. {describe(steps[i])}
                    </td>
                    <td class="num">{formatNumber(counts[i])}</td>
                    <td class="num">{x.conversion === undefined ? "—" : formatPercent(100 * x.conversion)}</td>
                    <td class="num">
                      {dropped === null
                        ? "—"
                        : `${formatNumber(dropped)} (${formatPercent(counts[i - 1] ? (100 * dropped) / counts[i - 1] : 0)})`}
                    </td>
                    <td class="num" title="The median time from the step before (docs/analytics.md, Funnels)">
                      {formatDuration(x.medianTimeMs)}
                    </td>
                    <td class="bar-col">
                      <span class="bar" aria-hidden="true">
                        <span style={{ width: `${Math.max(1, Math.round((100 * counts[i]) / first))}%` }} />
                      </span>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

export function Retention() {
  const { project } = useProject();
  const [query, set] = useQueryState();
  const start = filterFromQuery(query.start);
  const back = filterFromQuery(query.return);
  const cohort: Cohort = COHORTS.includes(query.cohort as Cohort) ? (query.cohort as Cohort) : "week";
  const periods: Periods = PERIODS.includes(query.periods as Periods) ? (query.periods as Periods) : "8";
  const time = useRange(query, "30d");
  const [which, setWhich] = useState<"start" | "return" | null>(null);
  const r = useAsync(
    () =>
      api.analytics
        .retention({
          projectId: project.id,
          start: { filters: filterToValue(start) },
          return: { filters: filterToValue(back) },
          interval: cohort,
          periods: BigInt(periods),
          time,
        })
        .then((a) => a.data?.cohorts ?? []),
    [project.id, query.start, query.return, cohort, periods, time.start, time.end],
  );
  const side = (key: "start" | "return", label: string, value: Filter | undefined) => (
    <section class="funnel-step" aria-label={label}>
      <div class="step-head">
        <h3>{label}</h3>
        <span class="muted">{describe(value)}</span>
      </div>
      {value || which === key ? (
        <FilterBuilder
          projectId={project.id}
          value={value}
          onChange={(f) => {
            if (!f) setWhich(null);
            set({ [key]: filterToQuery(f) }, true);
          }}
        />
      ) : (
        <Button onClick={() => setWhich(key)}>+ Filter events</Button>
      )}
    </section>
  );
  return (
    <>
      <div class="card query-card">
        <div class="toolbar">
          <Select
            label="Cohorts by"
            value={cohort}
            options={COHORTS.map((c) => ({ value: c, label: COHORT_LABEL[c] }))}
            onValue={(v) => set({ cohort: v === "week" ? undefined : v }, true)}
          />
          <Select
            label="Periods"
            value={periods}
            options={PERIODS}
            onValue={(v) => set({ periods: v === "8" ? undefined : v }, true)}
          />
          <div class="field">
            <span class="field-label" aria-hidden="true">
              Time range
            </span>
            <TimeRangePicker query={query} set={(c) => set(c, true)} fallback="30d" />
          </div>
        </div>
        <div class="retention-sides">
          {side("start", "First event (joins the cohort)", start)}
          {side("return", "Returning event", back)}
        </div>
      </div>
      <section class="card" aria-labelledby="retention-title">
        <h2 id="retention-title">Retention</h2>
        <p class="muted">
          A row per {cohort} in which users (<code>userId</code>) first did the first event; each cell is the share of
          them with a returning event {cohort} <i>n</i> later (UTC{cohort === "week" ? ", weeks from Monday" : ""}).
        </p>
        {r.error && <ErrorMessage error={r.error} />}
        {r.loading && !r.data && <Loading />}
        {r.data && r.data.length === 0 && <p class="muted">No user did the first event in this range.</p>}
        {r.data && r.data.length > 0 && (
          <div class="retention-scroll">
            <table aria-labelledby="retention-title" class="retention">
              <thead>
                <tr>
                  <th scope="col">Cohort</th>
                  <th scope="col" class="num">
                    Users
                  </th>
                  {Array.from({ length: Number(periods) }, (_, p) => (
                    <th key={p} scope="col" class="num">
                      {COHORT_LABEL[cohort]} {p}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {r.data.map((c) => {
                  const size = Number(c.size);
                  return (
                    <tr key={c.start}>
                      <th scope="row">
                        <time dateTime={c.start}>{c.start.slice(0, cohort === "month" ? 7 : 10)}</time>
                      </th>
                      <td class="num">{formatNumber(size)}</td>
                      {c.values.map((v, p) => {
                        const n = toJson(ValueSchema, v);
                        if (typeof n !== "number") return <td key={p} class="num future" />;
                        const share = size ? n / size : 0;
                        return (
                          <td
                            key={p}
                            class="num cell"
                            title={`${formatNumber(n)} of ${formatNumber(size)}`}
                            style={{
                              background: `rgba(67, 56, 202, ${(0.08 + 0.82 * share).toFixed(3)})`,
                              color: share > 0.5 ? "#fff" : undefined,
                            }}
                          >
                            {formatPercent(Math.round(1000 * share) / 10)}
                          </td>
                        );
                      })}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}
