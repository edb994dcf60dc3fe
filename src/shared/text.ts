import { z } from "zod";

// Text PostgreSQL can store as given: the one check of every string input. `text` and `jsonb`
// refuse NUL (U+0000) outright, and a lone UTF-16 surrogate cannot be encoded as UTF-8 (it would be
// stored as U+FFFD, silently changed). Every string that enters through any protocol passes this
// check at the edge (see message-check.ts), so no such value ever reaches a statement, a group
// commit or a log line; free-form JSON goes through json.ts, which uses the same rule. Names (metric
// names and units, tag keys) are also refused C0 and DEL control characters (`isPlainText`).

/** The short form of the rule, for one field of many (JSON values, zod schemas). */
export const TEXT_PROBLEM = "contains a NUL character or invalid Unicode";

const CONTROL = /[\u0000-\u001f\u007f]/;

/** Why `s` cannot be stored as given, or undefined when it can. */
export function textProblem(s: string): string | undefined {
  if (s.includes("\0")) return "must not contain NUL (U+0000)";
  if (!s.isWellFormed()) return "must not contain unpaired UTF-16 surrogates";
  return undefined;
}

/** True when `s` can be stored as given (the same rule as textProblem). */
export const isStorableText = (s: string): boolean => !s.includes("\0") && s.isWellFormed();

/** Storable text without control characters (C0, DEL): what a name may hold. */
export const isPlainText = (s: string): boolean => isStorableText(s) && !CONTROL.test(s);

export interface TextRules {
  /** Most characters (UTF-16 code units, as String.length counts). */
  max: number;
  /** Fewest characters after trimming; 1 answers "is required" for an empty string. */
  min?: number;
  /** Trim surrounding whitespace first (default true). */
  trim?: boolean;
  /** Refuse control characters too (isPlainText). */
  plain?: boolean;
}

/** A zod string of storable text within the given lengths. */
export function textSchema(r: TextRules) {
  let s = z.string();
  if (r.trim !== false) s = s.trim();
  if (r.min !== undefined) s = s.min(r.min, r.min === 1 ? "is required" : `at least ${r.min} characters`);
  s = s.max(r.max, `at most ${r.max} characters`);
  const checked = r.plain
    ? s.refine(isPlainText, "must not contain control characters or invalid Unicode")
    : s.refine(isStorableText, TEXT_PROBLEM);
  // The same rules as a pattern, for the OpenAPI document (which cannot see refinements or trimming).
  const blank = r.trim !== false && (r.min ?? 0) >= 1;
  return checked.meta({ pattern: textPattern(r.plain === true, blank) });
}

/**
 * The characters JavaScript's `\s` matches that are not control characters (C0, DEL): the spaces a
 * plain name may hold. Spelled out because RE2's `\s` is ASCII only; test/foundation/basics.test.ts
 * holds it to `\s`.
 */
export const PLAIN_SPACE = "[ \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]";

/**
 * A JSON Schema pattern of storable text (no NUL; lone surrogates cannot be named), `plain`: no
 * control characters either, `nonBlank`: something besides whitespace (a trimmed value of length >= 1).
 */
export function textPattern(plain: boolean, nonBlank: boolean, notFirst?: string): string {
  const ok = plain ? "[^\\u0000-\\u001f\\u007f]" : "[^\\u0000]";
  const visible = plain ? "[^\\s\\u0000-\\u001f\\u007f]" : "[^\\s\\u0000]";
  if (notFirst === undefined) return nonBlank ? `^${ok}*${visible}${ok}*$` : `^${ok}*$`;
  if (!nonBlank || !/^[$@#]$/.test(notFirst)) throw new Error(`textPattern: notFirst ${notFirst} not supported`);
  // No lookahead (the descriptors' RE2 has none): a first character that is visible and not
  // `notFirst`, or a space and something visible after it.
  const first = `[^\\${notFirst}${visible.slice(2)}`;
  return `^(?:${first}${ok}*|${plain ? PLAIN_SPACE : "\\s"}${ok}*${visible}${ok}*)$`;
}

/**
 * zod's address grammar (its `z.regexes.email`, without lookahead), with RFC 1035's domain labels:
 * 1 to 63 characters, a letter or digit first and last (zod's lets a label end with "-", which
 * JSON Schema's `format: email` refuses).
 */
export const EMAIL =
  /^(?:[A-Za-z0-9_'+\-]+\.)*[A-Za-z0-9_'+\-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/;

/**
 * An email address as sign-up, login and member invitations take it: trimmed, lowercased, zod's
 * address grammar, at most 254 characters (RFC 5321's path limit) with at most 64 before the `@`
 * (its local-part limit; the document's `format: email` says the same).
 */
export const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .email({ pattern: EMAIL })
  .max(254)
  .refine((v) => v.indexOf("@") <= 64, "the part before @ is at most 64 characters");

/**
 * A destination URL (webhooks, webhook subscribers): trimmed, at most 2,048 characters, http: or
 * https: with a host. Whether the host is public is the delivery's check (webhooks/targets/address.ts).
 */
export const httpUrlSchema = z
  .string()
  .trim()
  .max(2048)
  .refine((v) => isUrlWith(v, ["http:", "https:"]), "must be an http: or https: URL")
  .meta({ format: "uri", pattern: "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#]" });

/** Whether `v` parses as a URL with one of `protocols` (`"https:"`, ...) and a host. */
function isUrlWith(v: string, protocols: readonly string[]): boolean {
  try {
    const u = new URL(v);
    return protocols.includes(u.protocol) && u.hostname !== "";
  } catch {
    return false;
  }
}
