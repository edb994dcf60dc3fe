import type { DescMessage } from "@bufbuild/protobuf";
import { z } from "zod";
import { isPlainText, isStorableText, TEXT_PROBLEM } from "./text.js";

// The one check of free-form JSON input (event data/context/tags, identify properties, monitor
// metadata/tags, heartbeat metadata, metric tags, webhook test data): what PostgreSQL text and
// jsonb can hold and JSON can carry back out. Keys are data: `__proto__`, `constructor` and the like
// are kept as own keys (JSON.parse and protobuf-es make them own properties; nothing here copies).

const MAX_JSON_DEPTH = 64;

// Strings and keys: the storable-text rule of src/shared/text.ts (NUL, unpaired UTF-16 surrogates).
export const NUMBER_PROBLEM = "must be a finite number (1e400, Infinity and NaN are not JSON numbers)";

export interface JsonProblem {
  /** Keys and indexes from the checked value down to the offending one (empty: the value itself). */
  path: (string | number)[];
  message: string;
}

/**
 * Why a JSON value cannot be stored, or undefined when it can: a string or key with NUL or a lone
 * surrogate, a number that is not finite (JSON.parse reads 1e400 as Infinity; a binary protobuf
 * double may be NaN), nesting deeper than 64 levels. One walk; the path is built only on failure.
 */
export function jsonProblem(v: unknown, depth = 0): JsonProblem | undefined {
  if (typeof v === "string") return isStorableText(v) ? undefined : { path: [], message: TEXT_PROBLEM };
  if (typeof v === "number") return Number.isFinite(v) ? undefined : { path: [], message: NUMBER_PROBLEM };
  if (typeof v !== "object" || v === null) return undefined;
  if (depth >= MAX_JSON_DEPTH) return { path: [], message: `is nested deeper than ${MAX_JSON_DEPTH} levels` };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = jsonProblem(v[i], depth + 1);
      if (p) {
        p.path.unshift(i);
        return p;
      }
    }
    return undefined;
  }
  for (const k in v) {
    if (!isStorableText(k)) return { path: [], message: `has a key that ${TEXT_PROBLEM}` };
    const p = jsonProblem((v as Record<string, unknown>)[k], depth + 1);
    if (p) {
      p.path.unshift(k);
      return p;
    }
  }
  return undefined;
}

/**
 * `base` followed by the problem's path as a JSON path, the way the edge check (message-check.ts)
 * names fields: keys dotted, array indexes in brackets (`data.items[3].price`).
 */
export function problemField(base: string, p: JsonProblem): string {
  let out = base;
  for (const s of p.path) out = typeof s === "number" ? `${out}[${s}]` : out ? `${out}.${s}` : s;
  return out;
}

/**
 * A client's key as an error message may show it: control characters and unpaired surrogates
 * escaped (as JSON would write them), at most 100 characters. The key itself is data of any length.
 */
export function shownKey(key: string): string {
  let end = 0;
  let n = 0;
  for (const c of key) {
    if (n++ === 100) break;
    end += c.length; // whole code points: a pair is never cut in two
  }
  const short = end < key.length ? key.slice(0, end) + "…" : key;
  return isPlainText(short) ? short : JSON.stringify(short).slice(1, -1);
}

/** The keys a loose JSON item (a batch item carried as a Value) may have: a message's JSON names. */
export interface ItemKeys {
  known: ReadonlySet<string>;
  /** proto name -> JSON name, to point a `user_id` to `userId`. */
  protoNames: ReadonlyMap<string, string>;
}

/** The JSON names of `msg`'s fields, less `omit` (JSON names of fields the item does not take). */
export function itemKeys(msg: DescMessage, omit: readonly string[] = []): ItemKeys {
  const fields = msg.fields.filter((f) => !omit.includes(f.jsonName));
  return {
    known: new Set(fields.map((f) => f.jsonName)),
    protoNames: new Map(fields.filter((f) => f.name !== f.jsonName).map((f) => [f.name, f.jsonName])),
  };
}

/**
 * The first key of a loose item that is none of `keys`, as a refusal naming it (decisions.md:
 * unknown fields are a 400 `validation_failed`; in a batch the item alone is rejected), or
 * undefined. Keys such as `__proto__` and `constructor` are keys like any other.
 */
export function unknownItemKey(
  item: Record<string, unknown>,
  keys: ItemKeys,
): { field: string; message: string } | undefined {
  for (const key of Object.keys(item)) {
    if (keys.known.has(key)) continue;
    const field = shownKey(key);
    const json = keys.protoNames.get(key);
    return { field, message: json ? `unknown field '${field}' (did you mean '${json}'?)` : `unknown field '${field}'` };
  }
  return undefined;
}

export const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A zod schema for a free-form JSON object field: a plain object whose every value passes
 * jsonProblem, at most `maxBytes` serialized. The object is passed on as is (keys such as
 * `__proto__` stay own data keys; z.record would copy them onto a fresh object and lose them).
 * A problem is reported at its full path, e.g. `metadata.a.b`.
 */
export function jsonObjectSchema(maxBytes: number) {
  return z.custom<Record<string, unknown>>().superRefine((v, ctx) => {
    if (!isJsonObject(v)) {
      ctx.addIssue({ code: "custom", message: "must be a JSON object" });
      return;
    }
    const p = jsonProblem(v);
    if (p) {
      // One path segment holding the whole relative path, so that validate() prints `metadata.a[0]`.
      ctx.addIssue({ code: "custom", message: p.message, path: p.path.length ? [problemField("", p)] : [] });
      return;
    }
    const bytes = Buffer.byteLength(JSON.stringify(v));
    if (bytes > maxBytes)
      ctx.addIssue({ code: "custom", message: `must be at most ${maxBytes} bytes of JSON (is ${bytes})` });
  });
}
