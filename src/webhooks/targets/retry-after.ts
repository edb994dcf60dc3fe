// The receiver's "wait before retrying", read the same way for every type today: a 429 or 503 with
// Discord's JSON `retry_after` (seconds) or a Retry-After header (seconds or an HTTP date), in ms.

export function retryAfterMs(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  body: string,
  now: Date,
): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  try {
    const j = JSON.parse(body) as { retry_after?: unknown };
    if (typeof j?.retry_after === "number" && j.retry_after >= 0) return Math.ceil(j.retry_after * 1000);
  } catch {
    // not JSON
  }
  const h = headers["retry-after"];
  if (typeof h === "string" && h.trim() !== "") {
    if (/^\d+(\.\d+)?$/.test(h.trim())) return Math.ceil(Number(h) * 1000);
    const at = Date.parse(h);
    if (!Number.isNaN(at)) return Math.max(0, at - now.getTime());
  }
  return undefined;
}
