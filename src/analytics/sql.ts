// Bound parameters for generated SQL: values are only ever referenced as $n.
export class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

/** Typed slots of one project: top-level data key -> slot column (n1..n8 / s1..s8). */
export interface SlotMap {
  n: Map<string, string>;
  s: Map<string, string>;
}

export const NO_SLOTS: SlotMap = { n: new Map(), s: new Map() };

const SLOT_COLUMN = /^[ns][1-8]$/;
/** Slot column names come from our registry, but are checked again before use in SQL text. */
export function slotColumn(c: string): string {
  if (!SLOT_COLUMN.test(c)) throw new Error(`invalid slot column ${c}`);
  return c;
}
