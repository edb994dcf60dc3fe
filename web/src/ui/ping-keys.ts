// Ping keys created in this browser session (docs/uptime.md "Ping keys and ping URLs"). The keys
// screen shows a new key's secret once; it also notes it here, in memory only (never stored, gone
// on a reload), so a monitor's page can show the full ping URL while the person who just made the
// key is still here. Elsewhere the page shows the URL with a placeholder for the key.

const created = new Map<string, { name: string; secret: string }>();

/** Notes a ping key just created for `projectId` (the newest wins). */
export function rememberPingKey(projectId: string, key: { name: string; secret: string }): void {
  created.set(projectId, key);
}

/** The ping key created for `projectId` in this session, if any. */
export function pingKeyOfSession(projectId: string): { name: string; secret: string } | undefined {
  return created.get(projectId);
}

/** Vigil's public address: PUBLIC_URL (a meta element the server adds), else this page's origin. */
function publicOrigin(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="vigil-public-url"]')?.content || location.origin;
}

/** The ping URL of a monitor, on Vigil's public address. */
export function pingUrl(key: string, slug: string, origin = publicOrigin()): string {
  return `${origin}/ping/${key}/${encodeURIComponent(slug)}`;
}

/** The crontab-ready command that pings `url` (docs/uptime.md "Ping URLs"). */
export const pingCurl = (url: string) => `curl -fsS -m 10 --retry 5 ${url}`;
