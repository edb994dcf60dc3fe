import { useLocation } from "preact-iso";

/**
 * The screen's query parameters as state: a query a person builds (filters, time range, chart
 * options) lives in the URL, so the address bar is a link to share and Back undoes a change.
 * `set({a: "1", b: undefined})` changes a, removes b, keeps the rest (history entry replaced
 * unless `push`).
 */
export function useQueryState(): [
  Record<string, string>,
  (changes: Record<string, string | undefined>, push?: boolean) => void,
] {
  const loc = useLocation();
  const set = (changes: Record<string, string | undefined>, push = false) => {
    const q = new URLSearchParams(loc.query);
    for (const [k, v] of Object.entries(changes)) {
      if (v === undefined || v === "") q.delete(k);
      else q.set(k, v);
    }
    const s = q.toString();
    loc.route(`${loc.path}${s ? `?${s}` : ""}`, !push);
  };
  return [loc.query, set];
}
