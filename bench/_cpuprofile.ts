// Summarizes a V8 CPU profile (`node --cpu-prof`, e.g. the service under `BENCH_PROFILE=<dir> BENCH_ONLY=...
// npm run bench events`): busy time by area (self time of the code of each area) and the inclusive time of
// named functions, each as a share of busy time and, given the events the load carried, as µs per event.
//   npx tsx bench/_cpuprofile.ts <file.cpuprofile> [events] [function ...]
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

/** The areas of the budget, first match wins: [name, test on "<url> <function>"]. */
const AREAS: [string, RegExp][] = [
  ["idle", /^ \(idle\)$/],
  ["garbage collection", /^ \(garbage collector\)$/],
  // Socket writes (HTTP answers, PostgreSQL statements): native frames without a script.
  [
    "HTTP and sockets (node:http, net, streams)",
    /^ (writev|writeBuffer|writeUtf8String|writeLatin1String|writevGeneric)$/,
  ],
  // JSON.parse is a builtin: its time is the self time of the function that calls it.
  ["JSON.parse of the body (parseJsonBody)", / parseJsonBody$/],
  ["native / runtime (builtins)", /^ \(program\)$|^ \(root\)$|^ [A-Za-z]+$/],
  [
    "validation (src/events/validate, shared/json, shared/text)",
    /src\/events\/validate|src\/shared\/(json|text|validate)\.ts/,
  ],
  ["claims (src/events/claims)", /src\/events\/claims/],
  ["encoding the write (src/events/write, record)", /src\/events\/(write|record)\.ts|pg-copy-streams/],
  ["group commit, pipeline, projections (src/events, shared/coalesce)", /src\/events\/|src\/shared\/coalesce/],
  ["PostgreSQL driver (pg, pg-protocol)", /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-)/],
  [
    "REST layer and routing (src/transcoding, src/server, connect)",
    /src\/(transcoding|server)\/|@connectrpc|@bufbuild/,
  ],
  [
    "auth, limits, metrics (src/platform, shared, prom-client, pino)",
    /src\/(platform|shared|auth|config)\/|prom-client|pino/,
  ],
  ["HTTP and sockets (node:http, net, streams)", /node:|internal\//],
];

function main(): void {
  const args = process.argv.slice(2);
  // --window=<from>:<to>: only the samples taken in that span (µs of the monotonic clock, as the bench prints it).
  const win = args.find((a) => a.startsWith("--window="));
  const [from, to] = win ? win.slice(9).split(":").map(Number) : [-Infinity, Infinity];
  const [file, eventsArg, ...names] = args.filter((a) => a !== win);
  if (!file) throw new Error("usage: bench/_cpuprofile.ts <file.cpuprofile> [events] [--window=a:b] [function ...]");
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const events = Number(eventsArg) || 0;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let t = p.startTime;
  let span = 0;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    if (t < from || t > to) continue;
    span += p.timeDeltas[i] ?? 0;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const area = new Map<string, number>();
  const fn = new Map<string, number>();
  const other = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const tag = `${n.callFrame.url} ${n.callFrame.functionName}`;
    const a = AREAS.find(([, re]) => re.test(tag))?.[0] ?? "other";
    area.set(a, (area.get(a) ?? 0) + us);
    if (a === "idle") continue;
    busy += us;
    const f = `${n.callFrame.functionName || "(anonymous)"} ${n.callFrame.url.replace(/^.*\/(src|node_modules)\//, "$1/")}`;
    fn.set(f, (fn.get(f) ?? 0) + us);
    if (a === "other") other.set(f, (other.get(f) ?? 0) + us);
    if (names.length) {
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const name = byId.get(cur)!.callFrame.functionName;
        if (names.includes(name) && !seen.has(name)) {
          seen.add(name);
          inclusive.set(name, (inclusive.get(name) ?? 0) + us);
        }
      }
    }
  }
  const row = (label: string, us: number) =>
    `| ${label} | ${((100 * us) / busy).toFixed(1)} % |${events ? ` ${(us / events).toFixed(1)} |` : ""}`;
  console.log(`busy ${(busy / 1e6).toFixed(2)} s of ${(span / 1e6).toFixed(2)} s profiled`);
  console.log(`| Area (self time) | share of busy |${events ? " µs / event |" : ""}`);
  for (const [a, us] of [...area].filter(([a]) => a !== "idle").sort((x, y) => y[1] - x[1])) console.log(row(a, us));
  if (names.length) {
    console.log(`\n| Function (inclusive) | share of busy |${events ? " µs / event |" : ""}`);
    for (const name of names) console.log(row(name, inclusive.get(name) ?? 0));
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((x, y) => y[1] - x[1])
      .slice(0, n)
      .map(([f, us]) => `${((100 * us) / busy).toFixed(1).padStart(5)} %  ${f}`);
  console.log(["\nTop functions (self):", ...top(fn, 30), "\nIn 'other':", ...top(other, 10)].join("\n"));
}

main();
