import { cursorFormat } from "../shared/cursor.js";
import { uuidv7Time } from "./uuidv7.js";

// The event list's keyset cursor (the shared format, src/shared/cursor.ts; tag ev1): the id of the
// last event on the page. The id is a UUIDv7 carrying ts, so the id alone is the position (ts, id).

export const eventCursor = cursorFormat<{ ts: Date; id: string }, string>("ev1", {
  parts: 1,
  write: (lastId) => [lastId],
  read: ([id]) => {
    const ms = uuidv7Time(id);
    return ms === undefined ? undefined : { ts: new Date(ms), id: id.toLowerCase() };
  },
});

export const encodeCursor = (lastId: string): string => eventCursor.encode(lastId);

/** The position a cursor stands for, or undefined when it is not one of ours. */
export const decodeCursor = (cursor: string): { ts: Date; id: string } | undefined => eventCursor.decode(cursor);
