import { randomFillSync } from "node:crypto";

// UUIDv7 whose 48-bit millisecond prefix is the event's own timestamp (RFC 9562 §5.7), so an
// event id tells which weekly partition holds the row.

const POOL_SIZE = 16 * 1024;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

function random10(): Buffer {
  if (offset + 10 > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const b = pool.subarray(offset, offset + 10);
  offset += 10;
  return b;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** A UUIDv7 for the instant `ms` (0 <= ms < 2^48). */
export function uuidv7(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= 2 ** 48) throw new RangeError(`timestamp out of UUIDv7 range: ${ms}`);
  const r = random10();
  const b = new Array<number>(16);
  const hi = Math.floor(ms / 2 ** 16);
  const lo = ms % 2 ** 16;
  b[0] = (hi >>> 24) & 0xff;
  b[1] = (hi >>> 16) & 0xff;
  b[2] = (hi >>> 8) & 0xff;
  b[3] = hi & 0xff;
  b[4] = (lo >>> 8) & 0xff;
  b[5] = lo & 0xff;
  b[6] = 0x70 | (r[0] & 0x0f);
  b[7] = r[1];
  b[8] = 0x80 | (r[2] & 0x3f);
  for (let i = 9; i < 16; i++) b[i] = r[i - 6];
  const h = b.map((x) => HEX[x]);
  return `${h[0]}${h[1]}${h[2]}${h[3]}-${h[4]}${h[5]}-${h[6]}${h[7]}-${h[8]}${h[9]}-${h[10]}${h[11]}${h[12]}${h[13]}${h[14]}${h[15]}`;
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The millisecond timestamp of a UUIDv7, or undefined when `id` is not a well-formed UUIDv7. */
export function uuidv7Time(id: string): number | undefined {
  const s = id.toLowerCase();
  if (!UUID_V7.test(s)) return undefined;
  return parseInt(s.slice(0, 8) + s.slice(9, 13), 16);
}
