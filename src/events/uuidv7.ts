import { randomFillSync } from "node:crypto";

// UUIDv7 whose 48-bit millisecond prefix is the event's own timestamp (RFC 9562 §5.7), so an
// event id tells which weekly partition holds the row.

const POOL_SIZE = 16 * 1024;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

// The first 14 characters ("tttttttt-tttt-") of the last millisecond asked for: events of a group
// mostly share their timestamp. Per id: 10 random bytes read from the pool in place and 10 table
// look-ups (no Buffer view, array or intermediate strings: ingestion makes one id per event).
let prefixMs = -1;
let prefix = "";

/** A UUIDv7 for the instant `ms` (0 <= ms < 2^48). */
export function uuidv7(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= 2 ** 48) throw new RangeError(`timestamp out of UUIDv7 range: ${ms}`);
  if (offset + 10 > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const o = offset;
  offset += 10;
  if (ms !== prefixMs) {
    const t = ms.toString(16).padStart(12, "0");
    prefix = `${t.slice(0, 8)}-${t.slice(8)}-`;
    prefixMs = ms;
  }
  const r = pool;
  // Version 7 in the high nibble of byte 6, variant 10 in the top bits of byte 8 (RFC 9562 §5.7).
  return (
    prefix +
    HEX[0x70 | (r[o] & 0x0f)] +
    HEX[r[o + 1]] +
    "-" +
    HEX[0x80 | (r[o + 2] & 0x3f)] +
    HEX[r[o + 3]] +
    "-" +
    HEX[r[o + 4]] +
    HEX[r[o + 5]] +
    HEX[r[o + 6]] +
    HEX[r[o + 7]] +
    HEX[r[o + 8]] +
    HEX[r[o + 9]]
  );
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The millisecond timestamp of a UUIDv7, or undefined when `id` is not a well-formed UUIDv7. */
export function uuidv7Time(id: string): number | undefined {
  const s = id.toLowerCase();
  if (!UUID_V7.test(s)) return undefined;
  return parseInt(s.slice(0, 8) + s.slice(9, 13), 16);
}
