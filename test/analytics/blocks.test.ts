import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { percentileCont } from "../../src/analytics/blocks/engine.js";
import {
  decodeBlock,
  encodeBlock,
  numberColumn,
  stringColumn,
  type Block,
  type Column,
} from "../../src/analytics/blocks/format.js";

// Column blocks, pure parts: the encoding round-trips, and percentile_cont is PostgreSQL's.
describe("column block format", () => {
  it("round-trips strings (NULLs, hostile text, 16- and 32-bit codes) and numbers (NULL as NaN)", () => {
    const many = Array.from({ length: 80_000 }, (_, i) => (i % 7 === 0 ? null : `u${i}`));
    const b: Block = {
      rows: many.length,
      columns: new Map<string, Column>([
        ["user_id", stringColumn(many)],
        ["type", stringColumn(many.map((_, i) => ["view", 'a"b\\c\u0000', "😀", null][i % 4]))],
        [
          "data.amount",
          numberColumn(
            many.map((_, i) => (i % 5 === 0 ? null : i / 3)),
            2,
          ),
        ],
      ]),
    };
    assert.ok(
      b.columns.get("user_id")!.kind === "s" &&
        (b.columns.get("user_id") as { codes: unknown }).codes instanceof Uint32Array,
    );
    const d = decodeBlock(encodeBlock(b));
    assert.equal(d.rows, b.rows);
    for (const [name, c] of b.columns) {
      const e = d.columns.get(name)!;
      assert.equal(e.kind, c.kind);
      assert.equal(e.other, c.other);
      if (c.kind === "s" && e.kind === "s") {
        assert.deepEqual(e.dict, c.dict);
        assert.deepEqual([...e.codes], [...c.codes]);
      } else if (c.kind === "n" && e.kind === "n") assert.deepEqual([...e.values], [...c.values]);
    }
  });
});

describe("percentile_cont", () => {
  // PostgreSQL: rows sorted; first = floor(p * (n - 1)), second = ceil(...); first + (second - first) * fraction.
  const reference = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    const pos = p * (s.length - 1);
    const lo = Math.floor(pos),
      hi = Math.ceil(pos);
    return lo === hi ? s[lo] : s[lo] + (s[hi] - s[lo]) * (pos - lo);
  };
  it("matches the sorted definition on random data with duplicates", () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let t = 0; t < 200; t++) {
      const n = 1 + Math.floor(rnd() * 300);
      const xs = Array.from({ length: n }, () =>
        rnd() < 0.3 ? Math.floor(rnd() * 5) : Math.round(rnd() * 1e4) / 100 - 20,
      );
      for (const p of [0, 0.01, 0.5, 0.9, 0.95, 0.99, 1])
        assert.equal(percentileCont(Float64Array.from(xs), p), reference(xs, p), `n=${n} p=${p}`);
    }
    assert.equal(percentileCont(new Float64Array(0), 0.5), null);
  });
});
