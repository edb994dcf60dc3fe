import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  INITIAL_STATE,
  MAX_PREVIEW_EVALUATIONS,
  NO_DATA_POLICIES,
  OPERATORS,
  evaluate,
  evaluationAtOrAfter,
  evaluationCount,
  evaluationTimes,
  inMaintenance,
  monitorStatusOf,
  offsetFor,
  pause,
  preview,
  resume,
  withMonitor,
  type AlertState,
  type DecisionRule,
  type Evaluation,
  type EvaluationOutcome,
  type EvaluationState,
  type Incident,
  type Operator,
  type ResolveCondition,
  type Sample,
} from "../../src/alerts/model.js";
import { DAY_MS, MINUTE_MS } from "../../src/shared/time.js";

// The one decision function of alerts (decisions.md: Alerts), shared by live evaluation and preview:
// every transition of the state machine (docs/alerts.md "State machine"), then properties over random
// sample series: invariants, an independent reading of decisions.md, live = preview, split-point invariance.

const rule = (over: Partial<DecisionRule> = {}): DecisionRule => ({
  condition: { operator: "gt", value: 10 },
  forMs: 0,
  resolve: null,
  noData: "ok",
  minSamples: 1,
  ...over,
});
const st = (over: Partial<EvaluationState>): EvaluationState => ({ ...INITIAL_STATE, ...over });

const HIGH: Sample = { value: 20, samples: 5 }; // condition (gt 10) holds
const LOW: Sample = { value: 5, samples: 5 }; // does not hold
const NONE: Sample = { value: null, samples: 0 }; // no observation in the window

// Phases before an evaluation at T (the previous evaluations at multiples of 1000 ms).
const T = 10_000;
const OK = st({ value: 5, lastEvaluatedAt: 9_000 });
const PENDING = st({ state: "pending", value: 20, lastEvaluatedAt: 9_000, pendingSince: 8_000 });
const FIRING = st({ state: "firing", value: 20, lastEvaluatedAt: 9_000, pendingSince: 5_000, firingSince: 7_000 });
const RESOLVING = { ...FIRING, value: 5, resolvingSince: 9_000 };
const NO_DATA = st({ state: "no_data", lastEvaluatedAt: 9_000 });
const NO_DATA_PENDING = { ...PENDING, state: "no_data" as const, value: null };
const NO_DATA_FIRING = { ...FIRING, state: "no_data" as const, value: null };
const NO_DATA_RESOLVING = { ...RESOLVING, state: "no_data" as const, value: null };
const PAUSED = st({ state: "paused", value: 5, lastEvaluatedAt: 9_000 });

type Row = [
  name: string,
  rule: Partial<DecisionRule>,
  prev: EvaluationState,
  sample: Sample,
  next: Partial<EvaluationState>,
  open: number | null,
  resolve: number | null,
];

const after = (s: EvaluationState, over: Partial<EvaluationState>): Partial<EvaluationState> => ({
  ...s,
  lastEvaluatedAt: T,
  ...over,
});
const hyst: { resolve: ResolveCondition } = { resolve: { operator: "lt", value: 8, forMs: 1_000 } }; // resolves below 8, held for 1 s

const TABLE: Row[] = [
  // ok (and before the first evaluation)
  ["first evaluation, condition false: ok", {}, INITIAL_STATE, LOW, after(INITIAL_STATE, { value: 5 }), null, null],
  [
    "ok, holds, forMs 0: fires at once, started now",
    {},
    OK,
    HIGH,
    after(OK, { state: "firing", value: 20, pendingSince: T, firingSince: T }),
    T,
    null,
  ],
  [
    "ok, holds, forMs > 0: pending",
    { forMs: 2_000 },
    OK,
    HIGH,
    after(OK, { state: "pending", value: 20, pendingSince: T }),
    null,
    null,
  ],
  ["ok, does not hold: ok", {}, OK, LOW, after(OK, {}), null, null],
  // pending
  [
    "pending, holds, forMs not yet reached",
    { forMs: 2_001 },
    PENDING,
    HIGH,
    after(PENDING, { state: "pending" }),
    null,
    null,
  ],
  [
    "pending, holds, exactly forMs after pendingSince: fires, started at pendingSince",
    { forMs: 2_000 },
    PENDING,
    HIGH,
    after(PENDING, { state: "firing", firingSince: T }),
    8_000,
    null,
  ],
  [
    "pending, does not hold: back to ok, no incident",
    { forMs: 2_000 },
    PENDING,
    LOW,
    after(PENDING, { state: "ok", value: 5, pendingSince: null }),
    null,
    null,
  ],
  // firing without resolve
  ["firing, holds: firing", {}, FIRING, HIGH, after(FIRING, {}), null, null],
  [
    "firing, does not hold (no resolve): resolves now",
    {},
    FIRING,
    LOW,
    after(FIRING, { state: "ok", value: 5, pendingSince: null, firingSince: null }),
    null,
    T,
  ],
  // firing with resolve (hysteresis)
  [
    "firing, resolve starts holding: resolvingSince = now",
    hyst,
    FIRING,
    LOW,
    after(FIRING, { value: 5, resolvingSince: T }),
    null,
    null,
  ],
  [
    "firing, resolve held for its forMs: resolves",
    hyst,
    { ...RESOLVING, resolvingSince: 9_000 },
    LOW,
    after(FIRING, { state: "ok", value: 5, pendingSince: null, firingSince: null }),
    null,
    T,
  ],
  [
    "firing, resolve held less than its forMs",
    { resolve: { operator: "lt", value: 8, forMs: 1_001 } },
    RESOLVING,
    LOW,
    after(RESOLVING, {}),
    null,
    null,
  ],
  [
    "firing, in the band (condition false, resolve false): firing, resolve run cleared",
    hyst,
    RESOLVING,
    { value: 9, samples: 5 },
    after(FIRING, { value: 9 }),
    null,
    null,
  ],
  [
    "firing, resolve with forMs 0 resolves at its first holding evaluation",
    { resolve: { operator: "lt", value: 8, forMs: 0 } },
    FIRING,
    LOW,
    after(FIRING, { state: "ok", value: 5, pendingSince: null, firingSince: null }),
    null,
    T,
  ],
  [
    "firing, resolve decides alone: the condition not holding does not resolve",
    hyst,
    FIRING,
    { value: 9, samples: 5 },
    after(FIRING, { value: 9 }),
    null,
    null,
  ],
  // minSamples: fewer samples than required is no data
  [
    "fewer than minSamples is no data (ok policy): pending run ends",
    { forMs: 2_000, minSamples: 6 },
    PENDING,
    HIGH,
    after(PENDING, { state: "ok", value: null, pendingSince: null }),
    null,
    null,
  ],
  [
    "a value with zero samples is no data",
    { noData: "keep" },
    OK,
    { value: 20, samples: 0 },
    after(OK, { state: "no_data", value: null }),
    null,
    null,
  ],
  [
    "a non-finite value is no data",
    { noData: "keep" },
    OK,
    { value: Number.NaN, samples: 3 },
    after(OK, { state: "no_data", value: null }),
    null,
    null,
  ],
  // no data, ok policy: the condition does not hold (and `resolve` does)
  ["no data (ok) before the first evaluation: ok", {}, INITIAL_STATE, NONE, after(INITIAL_STATE, {}), null, null],
  ["no data (ok), ok: ok", {}, OK, NONE, after(OK, { value: null }), null, null],
  [
    "no data (ok), pending: ok",
    { forMs: 2_000 },
    PENDING,
    NONE,
    after(PENDING, { state: "ok", value: null, pendingSince: null }),
    null,
    null,
  ],
  [
    "no data (ok), firing: resolves",
    {},
    FIRING,
    NONE,
    after(FIRING, { state: "ok", value: null, pendingSince: null, firingSince: null }),
    null,
    T,
  ],
  [
    "no data (ok), firing with resolve: counts as resolve holding",
    hyst,
    FIRING,
    NONE,
    after(FIRING, { value: null, resolvingSince: T }),
    null,
    null,
  ],
  ["no data (ok), after a keep no_data: ok", {}, NO_DATA, NONE, after(NO_DATA, { state: "ok" }), null, null],
  // no data, alerting policy: the condition holds (and `resolve` does not)
  [
    "no data (alerting) before the first evaluation: fires (forMs 0)",
    { noData: "alerting" },
    INITIAL_STATE,
    NONE,
    after(INITIAL_STATE, { state: "firing", pendingSince: T, firingSince: T }),
    T,
    null,
  ],
  [
    "no data (alerting), ok, forMs > 0: pending",
    { noData: "alerting", forMs: 1 },
    OK,
    NONE,
    after(OK, { state: "pending", value: null, pendingSince: T }),
    null,
    null,
  ],
  [
    "no data (alerting), pending past forMs: fires",
    { noData: "alerting", forMs: 2_000 },
    PENDING,
    NONE,
    after(PENDING, { state: "firing", value: null, firingSince: T }),
    8_000,
    null,
  ],
  [
    "no data (alerting), firing: stays firing",
    { noData: "alerting" },
    FIRING,
    NONE,
    after(FIRING, { value: null }),
    null,
    null,
  ],
  [
    "no data (alerting), resolving: the resolve run breaks",
    { noData: "alerting", ...hyst },
    RESOLVING,
    NONE,
    after(FIRING, { value: null }),
    null,
    null,
  ],
  // no data, keep policy: nothing changes, the state reads no_data
  [
    "no data (keep) before the first evaluation: no_data",
    { noData: "keep" },
    INITIAL_STATE,
    NONE,
    after(INITIAL_STATE, { state: "no_data" }),
    null,
    null,
  ],
  [
    "no data (keep), ok: no_data",
    { noData: "keep" },
    OK,
    NONE,
    after(OK, { state: "no_data", value: null }),
    null,
    null,
  ],
  [
    "no data (keep), pending: no_data, the run kept (does not fire, even past forMs)",
    { noData: "keep", forMs: 1 },
    PENDING,
    NONE,
    after(NO_DATA_PENDING, {}),
    null,
    null,
  ],
  [
    "no data (keep), firing: no_data, the incident stays open",
    { noData: "keep" },
    FIRING,
    NONE,
    after(NO_DATA_FIRING, {}),
    null,
    null,
  ],
  [
    "no data (keep), resolving: the resolve run kept, not resolved",
    { noData: "keep", ...hyst },
    RESOLVING,
    NONE,
    after(NO_DATA_RESOLVING, {}),
    null,
    null,
  ],
  ["no data (keep), no_data: no_data", { noData: "keep" }, NO_DATA, NONE, after(NO_DATA, {}), null, null],
  // after a keep no_data, data decides from the phase kept underneath
  [
    "no_data over ok, holds: fires",
    { noData: "keep" },
    NO_DATA,
    HIGH,
    after(NO_DATA, { state: "firing", value: 20, pendingSince: T, firingSince: T }),
    T,
    null,
  ],
  [
    "no_data over pending, holds past forMs: fires from the kept pendingSince",
    { noData: "keep", forMs: 2_000 },
    NO_DATA_PENDING,
    HIGH,
    after(PENDING, { state: "firing", firingSince: T }),
    8_000,
    null,
  ],
  [
    "no_data over pending, does not hold: ok",
    { noData: "keep", forMs: 2_000 },
    NO_DATA_PENDING,
    LOW,
    after(PENDING, { state: "ok", value: 5, pendingSince: null }),
    null,
    null,
  ],
  ["no_data over firing, holds: firing", { noData: "keep" }, NO_DATA_FIRING, HIGH, after(FIRING, {}), null, null],
  [
    "no_data over firing, does not hold: resolves",
    { noData: "keep" },
    NO_DATA_FIRING,
    LOW,
    after(FIRING, { state: "ok", value: 5, pendingSince: null, firingSince: null }),
    null,
    T,
  ],
  [
    "no_data over resolving, resolve held through the gap: resolves",
    { noData: "keep", ...hyst },
    NO_DATA_RESOLVING,
    LOW,
    after(FIRING, { state: "ok", value: 5, pendingSince: null, firingSince: null }),
    null,
    T,
  ],
];

const effects = (o: EvaluationOutcome) => [o.openIncident?.startedAt ?? null, o.resolveIncident?.endedAt ?? null];

describe("evaluate: every transition of the state machine", () => {
  for (const [name, r, prev, sample, next, open, resolve] of TABLE) {
    it(name, () => {
      const out = evaluate(rule(r), prev, sample, T);
      assert.deepEqual(out.next, { ...INITIAL_STATE, ...next });
      assert.deepEqual(effects(out), [open, resolve]);
      assert.deepEqual(out.evaluation, { at: T, value: out.next.value, state: out.next.state });
    });
  }
  it("every operator compares as named, equality included", () => {
    const holds = (operator: Operator, value: number) =>
      evaluate(rule({ condition: { operator, value: 10 } }), OK, { value, samples: 1 }, T).next.state === "firing";
    assert.deepEqual(
      OPERATORS.map((op) => [9, 10, 11].map((v) => holds(op, v))),
      [
        [false, false, true],
        [false, true, true],
        [true, false, false],
        [true, true, false],
      ],
    );
  });
  it("paused: no evaluation, whatever the sample", () => {
    for (const s of [HIGH, LOW, NONE])
      for (const noData of NO_DATA_POLICIES)
        assert.deepEqual(evaluate(rule({ noData }), PAUSED, s, T), {
          next: PAUSED,
          evaluation: null,
          openIncident: null,
          resolveIncident: null,
        });
  });
  it("a time not after lastEvaluatedAt is a repeat: no evaluation, nothing changes", () => {
    for (const prev of [OK, PENDING, FIRING, NO_DATA_FIRING])
      for (const at of [prev.lastEvaluatedAt!, prev.lastEvaluatedAt! - 1])
        assert.deepEqual(evaluate(rule(), prev, LOW, at), {
          next: prev,
          evaluation: null,
          openIncident: null,
          resolveIncident: null,
        });
  });
});

describe("pause and resume", () => {
  it("pausing resolves an open incident at the pause and drops the runs in progress", () => {
    assert.deepEqual(pause(FIRING, 12_000), {
      next: { ...FIRING, state: "paused", pendingSince: null, firingSince: null },
      resolveIncident: { endedAt: 12_000 },
    });
    assert.deepEqual(pause(NO_DATA_FIRING, 12_000).resolveIncident, { endedAt: 12_000 }, "keep's no_data over firing");
    assert.deepEqual(pause(PENDING, 12_000), {
      next: { ...PENDING, state: "paused", pendingSince: null },
      resolveIncident: null,
    });
    assert.deepEqual(pause(PAUSED, 12_000), { next: PAUSED, resolveIncident: null }, "idempotent");
  });
  it("resuming gives ok; the next evaluation decides as after any ok one; idempotent", () => {
    const r = resume(pause(FIRING, 12_000).next);
    assert.equal(r.state, "ok");
    assert.equal(resume(r), r);
    const out = evaluate(rule({ forMs: 1_000 }), r, HIGH, 13_000);
    assert.deepEqual([out.next.state, out.next.pendingSince, effects(out)], ["pending", 13_000, [null, null]]);
  });
  it("the owned monitor: unknown before the first evaluation, down while firing (also under keep), paused", () => {
    assert.deepEqual(
      [INITIAL_STATE, OK, PENDING, FIRING, NO_DATA, NO_DATA_PENDING, NO_DATA_FIRING, PAUSED].map(monitorStatusOf),
      ["unknown", "up", "up", "down", "up", "up", "down", "paused"],
    );
  });
});

describe("scenarios", () => {
  const series = (r: DecisionRule, samples: Sample[], every = 1_000) =>
    preview(
      r,
      (at) => samples[at / every],
      samples.map((_, i) => i * every),
    );
  it("forMs 0: fires at pendingSince itself; a later low resolves", () => {
    const p = series(rule(), [LOW, HIGH, HIGH, LOW]);
    assert.deepEqual(
      p.evaluations.map((e) => e.state),
      ["ok", "firing", "firing", "ok"],
    );
    assert.deepEqual(p.incidents, [{ startedAt: 1_000, endedAt: 3_000 }]);
  });
  it("forMs > 0: pending until forMs after pendingSince; the incident starts when the condition first held", () => {
    const p = series(rule({ forMs: 2_500 }), [HIGH, HIGH, HIGH, HIGH, HIGH]);
    assert.deepEqual(
      p.evaluations.map((e) => e.state),
      ["pending", "pending", "pending", "firing", "firing"],
    );
    assert.deepEqual(p.incidents, [{ startedAt: 0, endedAt: null }], "open at the end: endedAt null");
  });
  it("flapping: runs shorter than forMs never fire; with forMs 0 every run is an incident", () => {
    const flap = [HIGH, LOW, HIGH, LOW, HIGH, LOW, HIGH];
    assert.deepEqual(series(rule({ forMs: 1_000 }), flap).incidents, []);
    assert.deepEqual(series(rule(), flap).incidents, [
      { startedAt: 0, endedAt: 1_000 },
      { startedAt: 2_000, endedAt: 3_000 },
      { startedAt: 4_000, endedAt: 5_000 },
      { startedAt: 6_000, endedAt: null },
    ]);
  });
  it("hysteresis: resolve below 8 held 2 s; dips and the band do not resolve", () => {
    const r = rule({ resolve: { operator: "lt", value: 8, forMs: 2_000 } });
    const v = (value: number): Sample => ({ value, samples: 1 });
    const p = series(r, [v(20), v(5), v(9), v(5), v(5), v(12), v(5), v(5), v(5), v(20)]);
    assert.deepEqual(
      p.evaluations.map((e) => e.state),
      ["firing", "firing", "firing", "firing", "firing", "firing", "firing", "firing", "ok", "firing"],
    );
    assert.deepEqual(p.incidents, [
      { startedAt: 0, endedAt: 8_000 },
      { startedAt: 9_000, endedAt: null },
    ]);
  });
  it("keep across a gap: a pending run survives it and fires on the first data after forMs", () => {
    const p = series(rule({ noData: "keep", forMs: 3_000 }), [HIGH, NONE, NONE, NONE, NONE, HIGH]);
    assert.deepEqual(
      p.evaluations.map((e) => e.state),
      ["pending", "no_data", "no_data", "no_data", "no_data", "firing"],
    );
    assert.deepEqual(p.incidents, [{ startedAt: 0, endedAt: null }]);
  });
  it("a fold from a carried state resolves an incident opened before it, with its start", () => {
    const p = preview(rule(), () => LOW, [T], FIRING);
    assert.deepEqual(p.incidents, [{ startedAt: 5_000, endedAt: T }]);
  });
});

describe("evaluation times and offsets", () => {
  it("offset + k·every since the epoch, both ends included", () => {
    assert.deepEqual(evaluationTimes(60_000, 15_000, 0, 200_000), { times: [15_000, 75_000, 135_000, 195_000] });
    assert.deepEqual(evaluationTimes(60_000, 15_000, 75_000, 135_000), { times: [75_000, 135_000] });
    assert.deepEqual(evaluationTimes(60_000, 0, 1, 59_999), { times: [] });
    assert.deepEqual(evaluationTimes(60_000, 0, -120_000, 0), { times: [-120_000, -60_000, 0] });
    assert.equal(evaluationAtOrAfter(60_000, 15_000, 15_001), 75_000);
    assert.equal(evaluationAtOrAfter(60_000, 15_000, 15_000), 15_000);
  });
  it("more than 10,000 evaluations is too many; exactly 10,000 is not", () => {
    const end = (MAX_PREVIEW_EVALUATIONS - 1) * MINUTE_MS;
    const ok = evaluationTimes(MINUTE_MS, 0, 0, end);
    assert.ok("times" in ok && ok.times.length === MAX_PREVIEW_EVALUATIONS);
    assert.deepEqual(evaluationTimes(MINUTE_MS, 0, 0, end + MINUTE_MS), { tooMany: MAX_PREVIEW_EVALUATIONS + 1 });
    assert.deepEqual(evaluationTimes(MINUTE_MS, 0, 0, 7 * DAY_MS), { tooMany: 10_081 }, "7 days at 1 min");
    assert.equal(evaluationCount(10_000, 0, 0, 30 * DAY_MS), 259_201);
  });
  it("a cadence that is not a positive integer, or an offset outside 0..every-1, is a programming error", () => {
    assert.throws(() => evaluationTimes(0, 0, 0, 1), RangeError);
    assert.throws(() => evaluationTimes(1_000, 1_000, 0, 1), RangeError);
    assert.throws(() => evaluationTimes(1_000, -1, 0, 1), RangeError);
  });
  it("offsetFor: stable, in 0..every-1, spread over the cadence", () => {
    assert.equal(offsetFor("alert-1", 60_000), offsetFor("alert-1", 60_000));
    const ids = Array.from({ length: 2_000 }, (_, i) => `01J${i.toString(36).padStart(8, "0")}`);
    const offsets = ids.map((id) => offsetFor(id, 60_000));
    assert.ok(offsets.every((o) => Number.isInteger(o) && o >= 0 && o < 60_000));
    const perTenth = Array.from({ length: 10 }, (_, d) => offsets.filter((o) => Math.floor(o / 6_000) === d).length);
    assert.ok(
      perTenth.every((n) => n > 120 && n < 280),
      `each tenth of the minute gets ~200 of 2,000: ${perTenth}`,
    );
    assert.ok(offsetFor("x", 2_592_000_000 * 4) >= 0, "cadences past 2^32 ms");
  });
});

// ---- Properties over random rules and sample series ----

const EVERY = 1_000;
const ruleArb: fc.Arbitrary<DecisionRule> = fc.record({
  condition: fc.record({ operator: fc.constantFrom(...OPERATORS), value: fc.integer({ min: 0, max: 6 }) }),
  forMs: fc.integer({ min: 0, max: 8 }).map((n) => n * 500),
  resolve: fc.option(
    fc.record({
      operator: fc.constantFrom(...OPERATORS),
      value: fc.integer({ min: 0, max: 6 }),
      forMs: fc.integer({ min: 0, max: 6 }).map((n) => n * 500),
    }),
    { nil: null },
  ),
  noData: fc.constantFrom(...NO_DATA_POLICIES),
  minSamples: fc.integer({ min: 0, max: 3 }),
});
const sampleArb: fc.Arbitrary<Sample> = fc.record({
  value: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null, freq: 6 }),
  samples: fc.integer({ min: 0, max: 4 }),
});
/** Samples of consecutive evaluations: steady stretches of 1-6 evaluations each, as a real series has. */
const seriesArb: fc.Arbitrary<Sample[]> = fc
  .array(fc.tuple(sampleArb, fc.integer({ min: 1, max: 6 })), { maxLength: 20 })
  .map((runs) => runs.flatMap(([s, n]) => Array.from({ length: n }, () => s)));
/** A rule, the samples of consecutive evaluations, and the cadence's offset. */
const caseArb = fc.record({ rule: ruleArb, samples: seriesArb, offset: fc.integer({ min: 0, max: EVERY - 1 }) });
type Case = { rule: DecisionRule; samples: Sample[]; offset: number };
const timesOf = (c: Case) => c.samples.map((_, i) => c.offset + i * EVERY);
const sampleAtOf = (c: Case) => (at: number) => c.samples[(at - c.offset) / EVERY];
const RUNS = { numRuns: 400 };

/**
 * decisions.md read directly, without a state machine: drop the `keep` evaluations (they change
 * nothing); a run of consecutive holding evaluations from index j fires at the first of them at
 * least forMs after t[j]; it then resolves at the first later evaluation e that ends a run of
 * resolve-holding evaluations (all after the firing one) lasting at least resolve.forMs (without
 * resolve: the first where the condition does not hold). The incident is [t[j], t[e]].
 */
function oracleIncidents(c: Case): Incident[] {
  const r = c.rule;
  const cmp = (op: string, a: number, b: number) =>
    op === "gt" ? a > b : op === "gte" ? a >= b : op === "lt" ? a < b : a <= b;
  const evs = c.samples
    .map((s, i) => {
      const data = s.samples >= Math.max(1, r.minSamples) && s.value !== null;
      const t = c.offset + i * EVERY;
      if (!data) {
        if (r.noData === "keep") return null;
        return { t, holds: r.noData === "alerting", resolves: r.noData === "ok" };
      }
      const holds = cmp(r.condition.operator, s.value!, r.condition.value);
      return { t, holds, resolves: r.resolve ? cmp(r.resolve.operator, s.value!, r.resolve.value) : !holds };
    })
    .filter((e) => e !== null);
  const out: Incident[] = [];
  let i = 0;
  while (i < evs.length) {
    const j = evs.findIndex((e, k) => k >= i && e.holds);
    if (j < 0) break;
    let k = j;
    while (k < evs.length && evs[k].holds) k++;
    let m = j;
    while (m < k && evs[m].t - evs[j].t < r.forMs) m++;
    if (m === k) {
      i = k;
      continue;
    }
    let end: number | null = null;
    let e = m + 1;
    for (; e < evs.length; e++) {
      if (!evs[e].resolves) continue;
      let s = e;
      while (s - 1 > m && evs[s - 1].resolves) s--;
      if (evs[e].t - evs[s].t >= (r.resolve?.forMs ?? 0)) {
        end = evs[e].t;
        break;
      }
    }
    out.push({ startedAt: evs[j].t, endedAt: end });
    i = e + 1;
  }
  return out;
}

/** Live evaluation: one evaluate call per due time from the stored row (JSON, as a database keeps it), each delivered twice. */
function live(c: Case, redeliver: boolean[]) {
  let row = JSON.stringify(INITIAL_STATE);
  const evaluations: Evaluation[] = [];
  const incidents: Incident[] = [];
  timesOf(c).forEach((at, i) => {
    for (const attempt of redeliver[i] ? [0, 1] : [0]) {
      const stored = JSON.parse(row) as EvaluationState;
      // A redelivery (another node, a retry after a crash) may read a different sample: it must change nothing.
      const sample = attempt === 0 ? c.samples[i] : { value: 3, samples: 4 };
      const out = evaluate(c.rule, stored, sample, at);
      if (attempt === 1) assert.deepEqual(out.next, stored, "a repeat changes nothing");
      if (out.evaluation) evaluations.push(out.evaluation);
      if (out.openIncident) {
        assert.ok(
          incidents.every((x) => x.endedAt !== null),
          "opens only when none is open",
        );
        incidents.push({ startedAt: out.openIncident.startedAt, endedAt: null });
      }
      if (out.resolveIncident) {
        const open = incidents.at(-1);
        assert.ok(open && open.endedAt === null, "resolves only an open incident");
        open.endedAt = out.resolveIncident.endedAt;
      }
      row = JSON.stringify(out.next);
    }
  });
  return { evaluations, incidents, state: JSON.parse(row) as EvaluationState };
}

describe("properties (fast-check)", () => {
  it("preview gives the incidents decisions.md describes (an independent reading)", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        assert.deepEqual(preview(c.rule, sampleAtOf(c), timesOf(c)).incidents, oracleIncidents(c));
      }),
      RUNS,
    );
  });
  it("invariants: one open incident at most, ordered and apart, starting where the condition held, firing after forMs", () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const p = preview(c.rule, sampleAtOf(c), timesOf(c));
        const times = timesOf(c);
        assert.deepEqual(
          p.evaluations.map((e) => e.at),
          times,
          "one evaluation per time",
        );
        const stateAt = new Map(p.evaluations.map((e) => [e.at, e.state]));
        p.incidents.forEach((inc, n) => {
          if (n < p.incidents.length - 1) assert.notEqual(inc.endedAt, null, "only the last may be open");
          if (inc.endedAt !== null) assert.ok(inc.startedAt < inc.endedAt);
          const next = p.incidents[n + 1];
          if (next) assert.ok(inc.endedAt! < next.startedAt, "apart and ordered");
          assert.ok(times.includes(inc.startedAt), "starts at an evaluation time");
          const held: AlertState[] = ["pending", "firing"];
          assert.ok(held.includes(stateAt.get(inc.startedAt)!), "where the condition held");
          // From the start to the firing evaluation the condition held (or a keep evaluation changed nothing).
          const fired = p.evaluations.find((e) => e.at >= inc.startedAt && e.state === "firing")!;
          assert.ok(fired.at - inc.startedAt >= c.rule.forMs, "firing only after forMs");
          for (const e of p.evaluations.filter((x) => x.at >= inc.startedAt && x.at < fired.at))
            assert.ok(e.state === "pending" || e.state === "no_data");
        });
        assert.equal(monitorStatusOf(p.state) === "down", p.incidents.at(-1)?.endedAt === null);
        if (c.rule.noData !== "keep") assert.ok(p.evaluations.every((e) => e.state !== "no_data"));
      }),
      RUNS,
    );
  });
  it("live evaluation (state stored as JSON between calls, redelivered) = preview", () => {
    fc.assert(
      fc.property(caseArb, fc.array(fc.boolean(), { maxLength: 120 }), (c, redeliver) => {
        const p = preview(c.rule, sampleAtOf(c), timesOf(c));
        const l = live(c, redeliver);
        assert.deepEqual(l.evaluations, p.evaluations);
        assert.deepEqual(l.incidents, p.incidents);
        assert.deepEqual(l.state, p.state);
      }),
      RUNS,
    );
  });
  it("split-point invariance: two folds with the state carried over = one fold", () => {
    fc.assert(
      fc.property(caseArb, fc.nat(), (c, cut) => {
        const times = timesOf(c);
        const k = times.length ? cut % (times.length + 1) : 0;
        const whole = preview(c.rule, sampleAtOf(c), times);
        const a = preview(c.rule, sampleAtOf(c), times.slice(0, k));
        const b = preview(c.rule, sampleAtOf(c), times.slice(k), a.state);
        assert.deepEqual([...a.evaluations, ...b.evaluations], whole.evaluations);
        assert.deepEqual(b.state, whole.state);
        // An incident open at the cut is the first half's last and the second half's first.
        const incidents = [...a.incidents];
        const open = incidents.at(-1);
        const rest = [...b.incidents];
        if (open && open.endedAt === null && rest[0]?.startedAt === open.startedAt)
          incidents[incidents.length - 1] = rest.shift()!;
        assert.deepEqual([...incidents, ...rest], whole.incidents);
      }),
      RUNS,
    );
  });
  it("pause and resume anywhere: never two open incidents; a pause closes the open one", () => {
    fc.assert(
      fc.property(caseArb, fc.array(fc.constantFrom("none", "pause", "resume"), { maxLength: 120 }), (c, ops) => {
        let s = INITIAL_STATE;
        let open: number | null = null;
        timesOf(c).forEach((at, i) => {
          if (ops[i] === "pause") {
            const p = pause(s, at - 1);
            assert.equal(p.resolveIncident !== null, open !== null);
            if (p.resolveIncident) open = null;
            s = p.next;
          } else if (ops[i] === "resume") s = resume(s);
          const out = evaluate(c.rule, s, c.samples[i], at);
          assert.equal(out.evaluation === null, s.state === "paused", "no evaluation while paused, one otherwise");
          if (out.openIncident) {
            assert.equal(open, null);
            open = out.openIncident.startedAt;
          }
          if (out.resolveIncident) {
            assert.notEqual(open, null);
            open = null;
          }
          s = out.next;
          assert.equal(monitorStatusOf(s) === "down", open !== null);
        });
      }),
      RUNS,
    );
  });
});

describe("withMonitor: the owned monitor's pause and resume", () => {
  const firing: EvaluationState = {
    state: "firing",
    value: 9,
    lastEvaluatedAt: 100_000,
    pendingSince: 90_000,
    firingSince: 100_000,
    resolvingSince: null,
  };
  it("a paused monitor pauses the alert (runs dropped)", () => {
    const s = withMonitor(firing, { status: "paused", resumedAt: null }, 110_000);
    assert.equal(s.state, "paused");
    assert.equal(s.firingSince, null);
    assert.equal(s.pendingSince, null);
    assert.equal(monitorStatusOf(s), "paused");
  });
  it("a resumed monitor gives ok, from a stored paused state or a pause and resume between evaluations", () => {
    const paused = pause(firing, 105_000).next;
    assert.deepEqual(withMonitor(paused, { status: "unknown", resumedAt: 106_000 }, 110_000), resume(paused));
    const between = withMonitor(firing, { status: "unknown", resumedAt: 106_000 }, 110_000);
    assert.equal(between.state, "ok");
    assert.equal(between.firingSince, null);
    assert.equal(between.pendingSince, null);
    // The next evaluation opens a new incident when the condition still holds, from its own time.
    const rule: DecisionRule = { condition: { operator: "gt", value: 1 }, forMs: 0, noData: "ok", minSamples: 1 };
    assert.deepEqual(evaluate(rule, between, { value: 5, samples: 1 }, 110_000).openIncident, { startedAt: 110_000 });
  });
  it("a resume before the last evaluation changes nothing", () => {
    assert.deepEqual(withMonitor(firing, { status: "down", resumedAt: 50_000 }, 110_000), firing);
    assert.deepEqual(withMonitor(firing, { status: "down", resumedAt: null }, 110_000), firing);
  });
});

describe("inMaintenance: the owned monitor in a maintenance window", () => {
  const IN = { inMaintenance: true, maintenanceEndedAt: null };
  const afterWindow = (end: number) => ({ inMaintenance: false, maintenanceEndedAt: end });
  it("a firing in the window opens nothing and is remembered; the first evaluation after it still firing opens the incident at the window's end, once", () => {
    const fired = inMaintenance(evaluate(rule(), OK, HIGH, T), IN);
    assert.equal(fired.openIncident, null);
    assert.equal(fired.next.state, "firing");
    assert.equal(fired.next.incidentDeferred, true);
    assert.equal(monitorStatusOf(fired.next), "down", "the monitor takes its evaluated status");
    // Still in the window: nothing.
    const still = inMaintenance(evaluate(rule(), fired.next, HIGH, T + 1_000), IN);
    assert.equal(still.openIncident, null);
    assert.equal(still.next.incidentDeferred, true);
    // The window ended at T + 1 500; the next evaluation still fires.
    const after = inMaintenance(evaluate(rule(), still.next, HIGH, T + 2_000), afterWindow(T + 1_500));
    assert.deepEqual(after.openIncident, { startedAt: T + 1_500 });
    assert.equal(after.next.incidentDeferred, false);
    const later = inMaintenance(evaluate(rule(), after.next, HIGH, T + 3_000), afterWindow(T + 1_500));
    assert.equal(later.openIncident, null, "once");
    // Its resolution resolves the incident opened after the window.
    const resolved = inMaintenance(evaluate(rule(), later.next, LOW, T + 4_000), afterWindow(T + 1_500));
    assert.deepEqual(resolved.resolveIncident, { endedAt: T + 4_000 });
  });
  it("resolved in the window, or at the first evaluation after it: nothing opens and nothing resolves", () => {
    const fired = inMaintenance(evaluate(rule(), OK, HIGH, T), IN);
    const inside = inMaintenance(evaluate(rule(), fired.next, LOW, T + 1_000), IN);
    assert.equal(inside.openIncident, null);
    assert.equal(inside.next.state, "ok");
    const next = inMaintenance(evaluate(rule(), inside.next, HIGH, T + 2_000), afterWindow(T + 1_500));
    assert.deepEqual(
      next.openIncident,
      { startedAt: T + 2_000 },
      "a new firing after the window is an incident as always",
    );
    const atEnd = inMaintenance(evaluate(rule(), fired.next, LOW, T + 2_000), afterWindow(T + 1_500));
    assert.equal(atEnd.resolveIncident, null, "nothing was opened: nothing to resolve");
    assert.equal(atEnd.openIncident, null);
    assert.equal(atEnd.next.incidentDeferred, false);
  });
  it("an incident open before the window is left as it is; outside windows the outcome is evaluate's", () => {
    const during = inMaintenance(evaluate(rule(), FIRING, LOW, T), IN);
    assert.deepEqual(during.resolveIncident, { endedAt: T }, "a recovery in the window resolves it");
    for (const [prev, sample] of [
      [OK, HIGH],
      [FIRING, LOW],
      [PENDING, HIGH],
    ] as const) {
      const plain = evaluate(rule({ forMs: 1_000 }), prev, sample, T);
      assert.deepEqual(inMaintenance(plain, afterWindow(T - 5_000)), plain);
    }
  });
});
