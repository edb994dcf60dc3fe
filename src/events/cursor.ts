import { uuidv7Time } from "./uuidv7.js";

// The event list's keyset cursor: the (ts, id) of the last event on the page. The id is a UUIDv7
// carrying ts, so the id alone is the position; it is wrapped so clients treat it as opaque.

const PREFIX = "ev1:";

export function encodeCursor(lastId: string): string {
  return Buffer.from(PREFIX + lastId).toString("base64url");
}

/** The position a cursor stands for, or undefined when it is not one of ours. */
export function decodeCursor(cursor: string): { ts: Date; id: string } | undefined {
  if (cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  if (!text.startsWith(PREFIX)) return undefined;
  const id = text.slice(PREFIX.length);
  const ms = uuidv7Time(id);
  return ms === undefined ? undefined : { ts: new Date(ms), id: id.toLowerCase() };
}
