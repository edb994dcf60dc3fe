// The one place the dashboard turns values into text.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

/** An RFC 3339 timestamp in the reader's locale and time zone; "—" for none. */
export function formatTime(iso: string | undefined | null): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
}

/** "3 min ago", "in 2 h": for last-use and heartbeat columns. */
export function timeAgo(iso: string | undefined | null, now = Date.now()): string {
  if (!iso) return "never";
  const ms = now - new Date(iso).getTime();
  if (Number.isNaN(ms)) return iso;
  const future = ms < 0;
  const s = Math.abs(ms) / 1000;
  const text =
    s < 45
      ? "just now"
      : s < 3600
        ? `${Math.round(s / 60)} min`
        : s < 86400
          ? `${Math.round(s / 3600)} h`
          : `${Math.round(s / 86400)} d`;
  if (text === "just now") return text;
  return future ? `in ${text}` : `${text} ago`;
}

/** A count or measure (bigint from int64 fields too). */
export function formatNumber(n: number | bigint | undefined | null): string {
  if (n === undefined || n === null) return "—";
  return number.format(typeof n === "bigint" ? Number(n) : n);
}

/** A duration in milliseconds: "850 ms", "12 s", "5 min", "2 h". */
export function formatDuration(ms: number | bigint | undefined | null): string {
  if (ms === undefined || ms === null) return "—";
  const v = Number(ms);
  if (v < 1000) return `${Math.round(v)} ms`;
  if (v < 60_000) return `${number.format(v / 1000)} s`;
  if (v < 3_600_000) return `${number.format(v / 60_000)} min`;
  if (v < 86_400_000) return `${number.format(v / 3_600_000)} h`;
  return `${number.format(v / 86_400_000)} d`;
}

/** A percentage with at most two decimals: "99.95 %". */
export const formatPercent = (p: number | undefined | null) =>
  p === undefined || p === null ? "—" : `${number.format(p)} %`;
