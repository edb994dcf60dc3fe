// `promtool check metrics` in TypeScript: the naming rules Prometheus's linter (client_golang's
// promlint, which promtool runs) applies to every metric family of a scrape, so a test can hold
// /metrics to them without a Go toolchain. Each problem reads as promtool prints it:
// `<family> <text>`. The rules, in promlint's order: help text; base units; `_total` on counters
// and only on counters; `_bucket`/`_count`/`_sum` and the `le`/`quantile` labels reserved to
// histograms and summaries; no type in the name; no `:`; snake_case names and labels; no
// abbreviated units. (A family promtool could not parse at all is reported as such too.)

type FamilyType = "counter" | "gauge" | "histogram" | "summary" | "gaugehistogram" | "untyped";

interface Family {
  name: string;
  type: FamilyType;
  help?: string;
  labels: Set<string>;
}

const UNITS: Record<string, string> = {
  amperes: "amperes",
  bytes: "bytes",
  celsius: "celsius",
  grams: "grams",
  joules: "joules",
  kelvin: "kelvin",
  meters: "meters",
  metres: "metres",
  seconds: "seconds",
  volts: "volts",
  minutes: "seconds",
  hours: "seconds",
  days: "seconds",
  weeks: "seconds",
  kelvins: "kelvin",
  fahrenheit: "celsius",
  rankine: "celsius",
  inches: "meters",
  yards: "meters",
  miles: "meters",
  bits: "bytes",
  calories: "joules",
  pounds: "grams",
  ounces: "grams",
};
const PREFIXES = ["pico", "nano", "micro", "milli", "centi", "deci", "deca", "hecto", "kilo", "kibi", "mega"].concat([
  "mibi",
  "giga",
  "gibi",
  "tera",
  "tebi",
  "peta",
  "pebi",
  "",
]);
const ABBREVIATIONS = ["s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d"];
const TYPE_WORDS = ["counter", "gauge", "summary", "histogram", "gauge_histogram"];
const camelCase = /[a-z][A-Z]/;

/** The sample names a family of this type writes (histograms: _bucket, _sum, _count...). */
function sampleNames(f: Family): string[] {
  if (f.type === "histogram" || f.type === "gaugehistogram")
    return [`${f.name}_bucket`, `${f.name}_sum`, `${f.name}_count`];
  if (f.type === "summary") return [f.name, `${f.name}_sum`, `${f.name}_count`];
  return [f.name];
}

/** Parses the text exposition format into families; unparseable lines are problems. */
function families(text: string): { families: Family[]; problems: string[] } {
  const byName = new Map<string, Family>();
  const problems: string[] = [];
  const family = (name: string): Family => {
    let f = byName.get(name);
    if (!f) byName.set(name, (f = { name, type: "untyped", labels: new Set() }));
    return f;
  };
  const owner = new Map<string, Family>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*)(?: (.*))?$/.exec(line);
    if (meta) {
      const f = family(meta[2]);
      if (meta[1] === "HELP") f.help = meta[3] ?? "";
      else {
        f.type = (meta[3] ?? "untyped") as FamilyType;
        for (const s of sampleNames(f)) owner.set(s, f);
      }
      continue;
    }
    if (line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+( \S+)?$/.exec(line);
    if (!sample) {
      problems.push(`unparseable line: ${line}`);
      continue;
    }
    const f = owner.get(sample[1]) ?? family(sample[1]);
    for (const m of (sample[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) {
      // A histogram's `le` and a summary's `quantile` are theirs by format, not labels of the family.
      if (!(m[1] === "le" && f.type === "histogram") && !(m[1] === "quantile" && f.type === "summary"))
        f.labels.add(m[1]);
    }
  }
  return { families: [...byName.values()], problems };
}

function unitOf(name: string): { unit: string; base: string } | undefined {
  const parts = name.split("_");
  for (const [unit, base] of Object.entries(UNITS))
    for (const p of PREFIXES) if (parts.includes(p + unit)) return { unit: p + unit, base };
  return undefined;
}

function lintFamily(f: Family): string[] {
  const out: string[] = [];
  const n = f.name;
  const lower = n.toLowerCase();
  const has = (word: string) => lower.includes(`_${word}_`) || lower.endsWith(`_${word}`);
  if (f.help === undefined) out.push("no help text");
  const u = unitOf(n);
  if (u && u.unit !== u.base) out.push(`use base unit "${u.base}" instead of "${u.unit}"`);
  const counter = f.type === "counter";
  const untyped = f.type === "untyped";
  if (counter && !n.endsWith("_total")) out.push(`counter metrics should have "_total" suffix`);
  if (!untyped && !counter && n.endsWith("_total")) out.push(`non-counter metrics should not have "_total" suffix`);
  if (!untyped) {
    const histogram = f.type === "histogram";
    const summary = f.type === "summary";
    if (!histogram && n.endsWith("_bucket")) out.push(`non-histogram metrics should not have "_bucket" suffix`);
    if (!histogram && !summary && n.endsWith("_count"))
      out.push(`non-histogram and non-summary metrics should not have "_count" suffix`);
    if (!histogram && !summary && n.endsWith("_sum"))
      out.push(`non-histogram and non-summary metrics should not have "_sum" suffix`);
    if (!histogram && f.labels.has("le")) out.push(`non-histogram metrics should not have "le" label`);
    if (!summary && f.labels.has("quantile")) out.push(`non-summary metrics should not have "quantile" label`);
  }
  for (const t of TYPE_WORDS) if (has(t)) out.push(`metric name should not include type '${t}'`);
  if (n.includes(":")) out.push("metric names should not contain ':'");
  if (camelCase.test(n)) out.push("metric names should be written in 'snake_case' not 'camelCase'");
  for (const l of f.labels)
    if (camelCase.test(l)) out.push("label names should be written in 'snake_case' not 'camelCase'");
  for (const a of ABBREVIATIONS) if (has(a)) out.push("metric names should not contain abbreviated units");
  return out.map((text) => `${n} ${text}`);
}

/** Every problem promtool's `check metrics` would report for this scrape, sorted; [] when clean. */
export function promlint(text: string): string[] {
  const parsed = families(text);
  return [...parsed.problems, ...parsed.families.flatMap(lintFamily)].sort();
}

/** The families of a scrape with their type (for assertions on what is served). */
export function metricTypes(text: string): Map<string, FamilyType> {
  return new Map(families(text).families.map((f) => [f.name, f.type]));
}
