import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { envSchema } from "../../src/config/index.js";

// The docs say what the code is (issue #29, point 21). Checked without a server:
//  * every repository path the docs name (in backticks, in a markdown link or in prose: `src/...`,
//    `test/...:12`, `docs/x.md#anchor`, globs and placeholders such as `test/dashboard/*.test.ts` or
//    `src/<feature>/`, a migration's file name) exists, or matches something; a link's `#anchor` is a
//    heading of its page; build outputs the .gitignore names (`web/dist`) need not exist;
//  * every setting of the configuration schema (envSchema's keys, not a regex of its source) has a
//    row in docs/operations.md's reference (or in the page a row of it delegates a `PREFIX_*` to),
//    every row names settings that exist, and a default written there is the schema's;
//  * the migration numbering ranges of docs/architecture.md cover src/storage/migrations.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const at = (p: string) => path.join(ROOT, p);
const read = (p: string) => readFileSync(at(p), "utf8");

const PAGES = [
  "README.md",
  "sdk/README.md",
  ...readdirSync(at("docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** The top-level folders whose paths the docs name from the repository root. */
const ROOTS = ["src", "test", "docs", "web", "bench", "workflows", "proto", "gen", "sdk", "deploy", ".ci"];
const ROOTED = new RegExp(
  String.raw`(?<![\w./@-])(?:\.\.?/)*((?:${ROOTS.map((r) => r.replace(".", "\\.")).join("|")})/[\w.*<>/-]*)(?::(\d+))?`,
  "g",
);
/** A migration named by its file name alone (`5000_webhooks.sql`): one of src/storage/migrations. */
const MIGRATION = /(?<![\w/])\d{4}_\w+\.sql\b/g;
/** Markdown links and images: `[text](target)`, the target relative to the page. */
const LINK = /\]\(([^)\s]+)\)/g;

/** Build outputs the docs may name though they are not committed: the .gitignore's `dir/sub/` lines. */
const BUILT = read(".gitignore")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => /^[\w.-]+\/[\w./-]+$/.test(l))
  .map((l) => (l.endsWith("/") ? l : `${l}/`));

const isPattern = (p: string) => /[*<>]|(?<![A-Za-z])N{2,}(?![A-Za-z])/.test(p);

/** A doc's path pattern as a regular expression: `*`, `**` (any folders), `<placeholder>`, `NNNN` (digits). */
function patternRegex(p: string): RegExp {
  const re = p
    .split(/(\*\*\/|\*|<[^>]*>|(?<![A-Za-z])N{2,}(?![A-Za-z]))/)
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
      if (part === "**/") return "(?:[^/]+/)*";
      if (part === "*") return "[^/]*";
      if (part.startsWith("<")) return "[^/]+";
      return "\\d+";
    })
    .join("");
  return new RegExp(`^${re}$`);
}

/** Every file and folder under `dir` (relative to the root; folders end with `/`). */
function walk(dir: string): string[] {
  if (!existsSync(at(dir)) || !statSync(at(dir)).isDirectory()) return [];
  return readdirSync(at(dir)).flatMap((name) => {
    if (name === "node_modules" || name === ".git") return [];
    const rel = `${dir}/${name}`;
    return statSync(at(rel)).isDirectory() ? [`${rel}/`, ...walk(rel)] : [rel];
  });
}

/** Why a repository path named by a doc does not hold, or undefined when it does. */
function problem(rel: string, line?: number): string | undefined {
  const p = rel.replace(/\/+$/, "") + (rel.endsWith("/") ? "/" : "");
  if (BUILT.some((b) => `${p}/`.startsWith(b))) return undefined;
  if (isPattern(p)) {
    const literal = p.split("/").filter((_, i, all) => !all.slice(0, i + 1).some(isPattern));
    const re = patternRegex(p);
    const found = walk(literal.join("/")).some(
      (f) => re.test(f) || (!p.endsWith("/") && re.test(f.replace(/\/$/, ""))),
    );
    return found ? undefined : "matches nothing";
  }
  // An import specifier names a TypeScript file by its .js (`sdk/src/index.js` is sdk/src/index.ts).
  const file = [p, p.replace(/\.js$/, ".ts"), p.replace(/\.js$/, ".tsx")].find((f) => existsSync(at(f)));
  if (!file) return "does not exist";
  if (p.endsWith("/") && !statSync(at(file)).isDirectory()) return "is not a folder";
  if (line !== undefined && read(file).split("\n").length < line) return `has no line ${line}`;
  return undefined;
}

/** GitHub's heading anchors of a markdown page (fenced code left out; repeats get -1, -2, ...). */
function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of read(page).split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const h = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const slug = h[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

/** Every broken path reference of one page, as "page:line: reference (why)". */
function brokenPaths(page: string): string[] {
  const out: string[] = [];
  read(page)
    .split("\n")
    .forEach((text, i) => {
      const where = `${page}:${i + 1}`;
      const rest = text.replace(LINK, (_, target: string) => {
        if (/^[a-z]+:/i.test(target)) return "]()"; // https:, mailto:
        const [file, anchor] = target.split("#");
        const rel = file ? path.posix.normalize(path.posix.join(path.posix.dirname(page), file)) : page;
        const why = rel.startsWith("../") ? "is outside the repository" : problem(rel);
        if (why) out.push(`${where}: ${target} (${why})`);
        else if (anchor && rel.endsWith(".md") && !anchors(rel).has(anchor))
          out.push(`${where}: ${target} (no heading #${anchor} in ${rel})`);
        return "]()";
      });
      for (const m of rest.matchAll(ROOTED)) {
        const ref = m[1].replace(/[.,]+$/, "");
        const why = problem(ref, m[2] === undefined ? undefined : Number(m[2]));
        if (why) out.push(`${where}: ${m[0]} (${why})`);
      }
      for (const [name] of rest.matchAll(MIGRATION))
        if (!existsSync(at(`src/storage/migrations/${name}`))) out.push(`${where}: ${name} (no such migration)`);
    });
  return out;
}

// ---- the configuration reference ------------------------------------------------------------

const SETTINGS = Object.keys(envSchema.shape);

/** A markdown page's section: from its `## title` heading to the next heading of that level. */
function section(page: string, title: string): string {
  const text = read(page);
  const start = text.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `${page} has a "## ${title}" section`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

interface Row {
  /** Settings named in the first cell (`A` / `B`). */
  names: string[];
  /** `PREFIX_*` anywhere in the row: the settings it sends to the page the row names. */
  delegates: string[];
  /** The default cell's values (`1` / `2`, or bare words), in the order of the names; undefined: prose. */
  defaults: (string | undefined)[];
  text: string;
}

/** A table's rows whose first cell names settings in backticks (`| \`A\` / \`B\` | \`1\` / 2 | ... |`). */
function settingRows(text: string): Row[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("| `"))
    .map((l) => {
      const cells = l.split("|").map((c) => c.trim());
      const names = [...cells[1].matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]);
      const delegates = [...l.matchAll(/`([A-Z][A-Z0-9_]*_)\*`/g)].map((m) => m[1]);
      const defaults = (cells[2] ?? "").split(" / ").map((v) => /^`([^`]*)`$|^([\w.]+)$/.exec(v)?.slice(1).join(""));
      return { names, delegates, text: l, defaults };
    })
    .filter((r) => r.names.length > 0);
}

const REFERENCE = settingRows(section("docs/operations.md", "Configuration reference"));

/** The page a row names (`docs/x.md`), where the settings it delegates are documented. */
const pageOf = (row: Row) => /\bdocs\/[\w-]+\.md\b/.exec(row.text)?.[0];

/** Where the reference documents a setting: its own row, or the page a `PREFIX_*` row sends it to. */
function documented(setting: string): boolean {
  if (REFERENCE.some((r) => r.names.includes(setting))) return true;
  return REFERENCE.some((r) => {
    if (!r.delegates.some((prefix) => setting.startsWith(prefix))) return false;
    const page = pageOf(r);
    return page !== undefined && settingRows(read(page)).some((other) => other.names.includes(setting));
  });
}

/** The reference and the pages it delegates to: every row of their tables must name real settings. */
const REFERENCE_PAGES = new Set([
  "docs/operations.md",
  ...REFERENCE.filter((r) => r.delegates.length > 0).flatMap((r) => pageOf(r) ?? []),
]);

/** The schema's default of a setting as the docs write it, or undefined when it has none (unset, derived). */
function schemaDefault(setting: string): string | undefined {
  const parsed = envSchema.shape[setting as keyof typeof envSchema.shape].safeParse(undefined);
  return parsed.success && parsed.data !== undefined ? String(parsed.data) : undefined;
}

describe("docs agree with the code", () => {
  it("every repository path the docs name exists (links' anchors included)", () => {
    assert.deepEqual(PAGES.flatMap(brokenPaths), []);
  });

  it("every setting of the configuration schema is in docs/operations.md's reference", () => {
    assert.ok(SETTINGS.length > 50, "the schema's settings are read");
    assert.deepEqual(
      SETTINGS.filter((s) => !documented(s)),
      [],
    );
  });

  it("the reference names only settings that exist, with the schema's defaults", () => {
    const wrong: string[] = [];
    for (const page of PAGES.filter((p) => p !== "sdk/README.md")) {
      for (const row of settingRows(read(page))) {
        const settings = row.names;
        // Elsewhere a table of other things may have upper-case names in its first cell.
        if (!settings.some((s) => SETTINGS.includes(s)) && !REFERENCE_PAGES.has(page)) continue;
        for (const s of settings) if (!SETTINGS.includes(s)) wrong.push(`${page}: ${s} is not a setting`);
        if (row.defaults.length !== settings.length) continue;
        settings.forEach((s, i) => {
          const def = SETTINGS.includes(s) ? schemaDefault(s) : undefined;
          if (def !== undefined && row.defaults[i] !== undefined && row.defaults[i] !== def)
            wrong.push(`${page}: ${s} defaults to ${def}, the docs say ${row.defaults[i]}`);
        });
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("docs/architecture.md's migration numbering ranges cover src/storage/migrations", () => {
    const ranges = /Ranges: ([^\n]*(?:\n[^\n]+)*)/.exec(section("docs/architecture.md", "Storage"));
    assert.ok(ranges, 'docs/architecture.md "Storage" lists the migration ranges');
    const named = new Set([...ranges[1].matchAll(/\b(\d)xxx\b/g)].map((m) => m[1]));
    const used = new Set(
      readdirSync(at("src/storage/migrations"))
        .filter((f) => /^\d{4}_/.test(f))
        .map((f) => f[0]),
    );
    assert.deepEqual(
      [...used].filter((d) => !named.has(d)).map((d) => `${d}xxx`),
      [],
    );
  });
});
