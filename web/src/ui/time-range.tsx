import { Select } from "./kit.js";

// The time range of the events, analytics and metrics screens, kept in the URL:
// `range=1h|24h|7d|30d|90d` or `range=custom&from=<RFC 3339>&to=<RFC 3339>`.

const PRESETS = {
  "15m": { label: "Last 15 minutes", ms: 15 * 60_000 },
  "1h": { label: "Last hour", ms: 3_600_000 },
  "24h": { label: "Last 24 hours", ms: 86_400_000 },
  "7d": { label: "Last 7 days", ms: 7 * 86_400_000 },
  "30d": { label: "Last 30 days", ms: 30 * 86_400_000 },
  "90d": { label: "Last 90 days", ms: 90 * 86_400_000 },
} as const;
export type Preset = keyof typeof PRESETS;

export interface Range {
  from: string;
  to: string;
}

/** The absolute range the query parameters name (default: the last 24 hours, up to now). */
export function rangeOf(query: Record<string, string>, fallback: Preset = "24h", now = Date.now()): Range {
  if (query.range === "custom" && query.from && query.to) {
    const from = new Date(query.from);
    const to = new Date(query.to);
    if (!Number.isNaN(from.getTime()) && !Number.isNaN(to.getTime()) && from < to)
      return { from: from.toISOString(), to: to.toISOString() };
  }
  const preset = (query.range in PRESETS ? query.range : fallback) as Preset;
  return { from: new Date(now - PRESETS[preset].ms).toISOString(), to: new Date(now).toISOString() };
}

/** datetime-local values are local time without an offset; the API takes RFC 3339 with one. */
const toLocalInput = (iso: string) => {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

export function TimeRangePicker(props: {
  query: Record<string, string>;
  set: (changes: Record<string, string | undefined>) => void;
  fallback?: Preset;
}) {
  const value =
    props.query.range === "custom"
      ? "custom"
      : ((props.query.range in PRESETS ? props.query.range : (props.fallback ?? "24h")) as Preset | "custom");
  const range = rangeOf(props.query, props.fallback);
  return (
    <div class="time-range">
      <Select
        label="Time range"
        hideLabel
        value={value}
        options={[
          ...Object.entries(PRESETS).map(([v, p]) => ({ value: v as Preset | "custom", label: p.label })),
          { value: "custom", label: "Custom range" },
        ]}
        onValue={(v) =>
          v === "custom"
            ? props.set({ range: "custom", from: range.from, to: range.to })
            : props.set({ range: v, from: undefined, to: undefined })
        }
      />
      {value === "custom" && (
        <>
          <label>
            <span class="visually-hidden">From</span>
            <input
              type="datetime-local"
              value={toLocalInput(range.from)}
              onChange={(e) => {
                const v = (e.target as HTMLInputElement).value;
                if (v) props.set({ from: new Date(v).toISOString() });
              }}
            />
          </label>
          <span aria-hidden="true">–</span>
          <label>
            <span class="visually-hidden">To</span>
            <input
              type="datetime-local"
              value={toLocalInput(range.to)}
              onChange={(e) => {
                const v = (e.target as HTMLInputElement).value;
                if (v) props.set({ to: new Date(v).toISOString() });
              }}
            />
          </label>
        </>
      )}
    </div>
  );
}
