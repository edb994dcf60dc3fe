// Column blocks: one project-hour of events, stored column by column (pure encoding).
//
// A block holds, for every event of the hour (in no particular order): its type, its userId and
// the value of each typed slot the project had active when the block was built. String columns are
// dictionary-encoded (code 0 = NULL, code i = dict[i - 1]); numeric columns are float64 with NaN
// for NULL (slots only ever hold finite numbers). `other` counts the rows whose data key holds a
// non-null JSON value of the other type (the slot is NULL there): queries that would need those
// values (grouping, exists, values of the other type) do not use the block.
//
// Layout: u32 header length, header JSON, then each column's bytes in header order (8-aligned).

export interface StringColumn {
  kind: "s";
  dict: string[];
  codes: Uint16Array | Uint32Array;
  other: number;
}
export interface NumberColumn {
  kind: "n";
  values: Float64Array;
  other: number;
}
export type Column = StringColumn | NumberColumn;

export interface Block {
  rows: number;
  /** `type`, `user_id`, then `data.<key>` for each slotted top-level data key. */
  columns: Map<string, Column>;
}

interface Header {
  v: 1;
  rows: number;
  cols: { name: string; kind: "s" | "n"; other: number; dict?: string[]; width?: 2 | 4 }[];
}

const align8 = (n: number) => (n + 7) & ~7;

/** Dictionary-encodes string values (null -> code 0). */
export function stringColumn(values: (string | null)[], other = 0): StringColumn {
  const index = new Map<string, number>();
  const dict: string[] = [];
  const codes = new Uint32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null) continue;
    let c = index.get(v);
    if (c === undefined) {
      dict.push(v);
      c = dict.length;
      index.set(v, c);
    }
    codes[i] = c;
  }
  return { kind: "s", dict, codes: dict.length < 0xffff ? Uint16Array.from(codes) : codes, other };
}

export function numberColumn(values: (number | null)[], other = 0): NumberColumn {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i] ?? NaN;
  return { kind: "n", values: out, other };
}

export function encodeBlock(b: Block): Buffer {
  const header: Header = { v: 1, rows: b.rows, cols: [] };
  const bodies: Uint8Array[] = [];
  for (const [name, c] of b.columns) {
    if (c.kind === "s") {
      const width = c.codes instanceof Uint16Array ? 2 : 4;
      header.cols.push({ name, kind: "s", other: c.other, dict: c.dict, width });
      bodies.push(new Uint8Array(c.codes.buffer, c.codes.byteOffset, c.codes.byteLength));
    } else {
      header.cols.push({ name, kind: "n", other: c.other });
      bodies.push(new Uint8Array(c.values.buffer, c.values.byteOffset, c.values.byteLength));
    }
  }
  const h = Buffer.from(JSON.stringify(header), "utf8");
  let size = align8(4 + h.length);
  for (const x of bodies) size = align8(size + x.byteLength);
  const out = Buffer.alloc(size);
  out.writeUInt32LE(h.length, 0);
  h.copy(out, 4);
  let at = align8(4 + h.length);
  for (const x of bodies) {
    out.set(x, at);
    at = align8(at + x.byteLength);
  }
  return out;
}

export function decodeBlock(buf: Buffer): Block {
  const hl = buf.readUInt32LE(0);
  const header = JSON.parse(buf.toString("utf8", 4, 4 + hl)) as Header;
  if (header.v !== 1) throw new Error(`unknown block version ${header.v}`);
  const columns = new Map<string, Column>();
  let at = align8(4 + hl);
  for (const c of header.cols) {
    if (c.kind === "s") {
      const bytes = header.rows * (c.width ?? 4);
      const copy = buf.subarray(at, at + bytes);
      const codes = c.width === 2 ? new Uint16Array(header.rows) : new Uint32Array(header.rows);
      new Uint8Array(codes.buffer).set(copy);
      columns.set(c.name, { kind: "s", dict: c.dict ?? [], codes, other: c.other });
      at = align8(at + bytes);
    } else {
      const bytes = header.rows * 8;
      const values = new Float64Array(header.rows);
      new Uint8Array(values.buffer).set(buf.subarray(at, at + bytes));
      columns.set(c.name, { kind: "n", values, other: c.other });
      at = align8(at + bytes);
    }
  }
  return { rows: header.rows, columns };
}

/** Approximate heap size of a decoded block (for the cache budget). */
export function blockBytes(b: Block): number {
  let n = 200;
  for (const c of b.columns.values()) {
    if (c.kind === "n") n += c.values.byteLength;
    else n += c.codes.byteLength + c.dict.reduce((a, s) => a + 40 + 2 * s.length, 0);
  }
  return n;
}
