import { badRequest, type ApiError } from "./errors.js";
import { z } from "zod";
import { alsoRefused } from "./validate.js";

// Keyset cursors: the one format of every list's `cursor` / `nextCursor`. A cursor is the base64url
// of `<tag>:<part>|<part>…`, the position after the last row of a page (its sort key). It is opaque
// to clients (they pass nextCursor back) and tamper-evident the way a cursor without a secret can be:
// * the tag names the list and the format's version (`ev1`, `mon1`, …): another list's cursor is
//   refused, and a format can change later under a new tag;
// * every part must pass the list's own grammar (a UUID, a timestamp of the one grammar, …), and
//   the number of parts must match;
// * the text must be exactly what encode() writes: base64url characters only, canonical (no
//   padding, no trailing bits, valid UTF-8), at most MAX_CURSOR_LENGTH characters.
// A cursor that fails any of these is a 400 `validation_failed` naming the cursor's field; it is
// never read as some other position. A cursor is a position, not a snapshot of the filters.

export const MAX_CURSOR_LENGTH = 200;

/** What JSON Schema cannot say about a cursor (alsoRefused): only the list's own cursors are read. */
export const CURSOR_REFUSED = "a cursor that is not a nextCursor this same list answered";

/** A cursor field's rule (zod). */
export const cursorRule = alsoRefused(z.string().max(MAX_CURSOR_LENGTH), CURSOR_REFUSED);

const BASE64URL = /^[A-Za-z0-9_-]+$/;

export interface CursorFormat<P, W = P> {
  /** The cursor of a position (the last row of a page). */
  encode(position: W): string;
  /** The position a cursor stands for, or undefined when it is not one of this list's. */
  decode(cursor: string): P | undefined;
  /** The position, or the 400 naming `field` (the request field the cursor came in). */
  read(cursor: string, field?: string): P;
}

export interface CursorParts<P, W = P> {
  /** The parts of a position, each free of `|`. */
  write(position: W): string[];
  /** The position of checked parts, or undefined when a part fails the list's grammar. */
  read(parts: string[]): P | undefined;
  /** How many parts a cursor of this list holds. */
  parts: number;
}

/** The 400 for a cursor that is not one of the list's. */
function invalidCursor(field = "cursor"): ApiError {
  return badRequest("invalid cursor: pass the nextCursor of a previous page", [
    { field, message: "not a cursor of this list" },
  ]);
}

/** The cursor format of one list, tagged `tag` (letters and digits: the list and its version). */
export function cursorFormat<P, W = P>(tag: string, f: CursorParts<P, W>): CursorFormat<P, W> {
  if (!/^[a-z][a-z0-9]*$/.test(tag)) throw new Error(`cursor tag '${tag}': lowercase letters and digits`);
  const prefix = `${tag}:`;
  const decode = (cursor: string): P | undefined => {
    if (cursor.length > MAX_CURSOR_LENGTH || !BASE64URL.test(cursor)) return undefined;
    const text = Buffer.from(cursor, "base64url").toString("utf8");
    if (!text.startsWith(prefix) || Buffer.from(text, "utf8").toString("base64url") !== cursor) return undefined;
    const parts = text.slice(prefix.length).split("|");
    if (parts.length !== f.parts || parts.some((p) => p === "")) return undefined;
    return f.read(parts);
  };
  return {
    encode(position) {
      const parts = f.write(position);
      if (parts.length !== f.parts || parts.some((p) => p === "" || p.includes("|")))
        throw new Error(`cursor ${tag}: bad parts ${JSON.stringify(parts)}`);
      return Buffer.from(prefix + parts.join("|"), "utf8").toString("base64url");
    },
    decode,
    read(cursor, field = "cursor") {
      const p = decode(cursor);
      if (p === undefined) throw invalidCursor(field);
      return p;
    },
  };
}
