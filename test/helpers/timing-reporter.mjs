// A node:test reporter of where a pass's time goes: one JSON line per test file, {file, ms, tests},
// `ms` being the sum of the file's top-level tests' durations. test/run.ts adds it beside the usual
// reporter and prints the slowest files at the end of `npm test`. Plain JavaScript: node loads
// reporters before tsx's loader is registered.

/** @param {AsyncIterable<{ type: string, data: { nesting?: number, file?: string, details?: { duration_ms?: number } } }>} source */
export default async function* timingReporter(source) {
  /** @type {Map<string, { ms: number, tests: number }>} */
  const files = new Map();
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const { nesting, file, details } = event.data;
    if (nesting !== 0 || !file) continue;
    const f = files.get(file) ?? { ms: 0, tests: 0 };
    f.ms += details?.duration_ms ?? 0;
    f.tests++;
    files.set(file, f);
  }
  for (const [file, f] of files) yield `${JSON.stringify({ file, ms: Math.round(f.ms), tests: f.tests })}\n`;
}
