/**
 * The dashboard's example requests: one `curl` that POSTs JSON to this Vigil, in one style on every
 * screen (a key screen fills in the real secret; elsewhere `$VIGIL_KEY`, so the line runs as pasted
 * after `export VIGIL_KEY=...`). Bodies are written without single quotes (they sit inside '...').
 */
export function curlPost(path: string, body?: unknown, key = "$VIGIL_KEY", origin = location.origin): string {
  const lines = [
    `curl -s -X POST ${origin}${path}`,
    `  -H "Authorization: Bearer ${key}"`,
    `  -H "Content-Type: application/json"`,
  ];
  if (body !== undefined) lines.push(`  -d '${JSON.stringify(body)}'`);
  return lines.join(" \\\n");
}
