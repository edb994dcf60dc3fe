// The shared basics (src/shared/): one cursor format for every list, one storable-text check.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { queryCursor } from "../../src/analytics/events.js";
import { eventCursor } from "../../src/events/cursor.js";
import { uuidv7 } from "../../src/events/uuidv7.js";
import { pointsCursor } from "../../src/metrics/requests.js";
import { monitorCursor } from "../../src/uptime/monitor-list.js";
import { deliveryCursor } from "../../src/webhooks/requests.js";
import { cursorFormat, MAX_CURSOR_LENGTH } from "../../src/shared/cursor.js";
import { ApiError } from "../../src/shared/errors.js";
import fc from "fast-check";
import {
  emailSchema,
  isPlainText,
  isStorableText,
  PLAIN_SPACE,
  textPattern,
  textProblem,
  textSchema,
} from "../../src/shared/text.js";

const pair = cursorFormat<{ n: string; id: string }>("t1", {
  parts: 2,
  write: (p) => [p.n, p.id],
  read: ([n, id]) => (/^\d+$/.test(n) && /^[a-z]+$/.test(id) ? { n, id } : undefined),
});
const b64 = (s: string) => Buffer.from(s).toString("base64url");

const id = uuidv7(Date.UTC(2024, 0, 1));
const at = new Date(Date.UTC(2024, 0, 1));

const cursors: Record<string, { sample: string; decode(c: string): unknown }> = {
  events: { sample: eventCursor.encode(id), decode: (c) => eventCursor.decode(c) },
  "events/query": { sample: queryCursor.encode({ us: "1704067200000000", id }), decode: (c) => queryCursor.decode(c) },
  "metrics/points": {
    sample: pointsCursor.encode({ ts: at.toISOString(), id }),
    decode: (c) => pointsCursor.decode(c),
  },
  monitors: {
    sample: monitorCursor.encode({ at: "2024-01-01T00:00:00.000000Z", id: "mon_abc" }),
    decode: (c) => monitorCursor.decode(c),
  },
  deliveries: {
    sample: deliveryCursor.encode({ created_at: at, id: "whd_abc" } as Parameters<typeof deliveryCursor.encode>[0]),
    decode: (c) => deliveryCursor.decode(c),
  },
};

describe("cursor format", () => {
  it("round-trips a position", () => {
    const c = pair.encode({ n: "42", id: "abc" });
    assert.match(c, /^[A-Za-z0-9_-]+$/);
    assert.deepEqual(pair.decode(c), { n: "42", id: "abc" });
    assert.deepEqual(pair.read(c), { n: "42", id: "abc" });
  });

  it("refuses what it did not write", () => {
    const good = pair.encode({ n: "42", id: "abc" });
    for (const c of [
      "garbage!", // not base64url
      `${good}=`, // padding
      b64("t2:42|abc"), // another list's tag
      b64("42|abc"), // no tag
      b64("t1:42"), // a part missing
      b64("t1:42|abc|x"), // a part too many
      b64("t1:42|"), // an empty part
      b64("t1:x42|abc"), // a part failing the list's grammar
      b64(`t1:${"1".repeat(200)}|abc`), // longer than MAX_CURSOR_LENGTH
      Buffer.from([0x74, 0x31, 0x3a, 0xff, 0x7c, 0x61]).toString("base64url"), // not UTF-8
    ]) {
      assert.equal(pair.decode(c), undefined, c);
    }
    // Same bytes, other text: the last character's unused low bits changed ("t1:42|abc" has 9 bytes, so no spare bits;
    // "t1:42|ab" has 8: its last base64 character carries 2 spare bits).
    const short = pair.encode({ n: "42", id: "ab" });
    const last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".indexOf(short.at(-1)!);
    const twin = short.slice(0, -1) + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last | 1];
    assert.notEqual(twin, short);
    assert.deepEqual(Buffer.from(twin, "base64url"), Buffer.from(short, "base64url"));
    assert.equal(pair.decode(twin), undefined);
    assert.ok(b64(`t1:${"1".repeat(200)}|abc`).length > MAX_CURSOR_LENGTH);
  });

  it("read() is a 400 validation_failed naming the cursor's field", () => {
    assert.throws(
      () => pair.read("garbage!", "pagination.cursor"),
      (e: unknown) =>
        e instanceof ApiError &&
        e.status === 400 &&
        e.errorCode === "validation_failed" &&
        JSON.stringify(e.restDetails).includes('"field":"pagination.cursor"'),
    );
  });

  it("refuses a part it cannot carry", () => {
    assert.throws(() => pair.encode({ n: "4|2", id: "abc" }));
    assert.throws(() => pair.encode({ n: "", id: "abc" }));
  });

  it("every list's cursor is refused by every other list", () => {
    for (const [name, list] of Object.entries(cursors)) {
      assert.ok(list.decode(list.sample) !== undefined, `${name} reads its own cursor`);
      for (const [other, o] of Object.entries(cursors))
        if (other !== name) assert.equal(list.decode(o.sample), undefined, `${name} refuses ${other}'s cursor`);
    }
  });
});

describe("storable text", () => {
  it("refuses NUL and lone surrogates, keeps pairs", () => {
    assert.equal(isStorableText("ok \u{1F600}"), true);
    assert.equal(isStorableText("a\u0000b"), false);
    assert.equal(isStorableText("a\ud800"), false);
    assert.equal(isStorableText("\udc00a"), false);
    assert.equal(textProblem("fine"), undefined);
    assert.match(textProblem("a\u0000")!, /NUL/);
    assert.match(textProblem("a\ud800")!, /surrogate/);
  });

  it("names also refuse control characters", () => {
    assert.equal(isPlainText("cpu.load"), true);
    assert.equal(isPlainText("a\tb"), false);
    assert.equal(isPlainText("a\u007f"), false);
    assert.equal(isPlainText("a\ud800"), false);
  });

  it("textSchema: trims, bounds the length, refuses unstorable text", () => {
    const s = textSchema({ min: 1, max: 5 });
    assert.equal(s.parse("  abc "), "abc");
    assert.equal(s.safeParse("   ").success, false);
    assert.equal(s.safeParse("abcdef").success, false);
    assert.equal(s.safeParse("a\u0000").success, false);
    assert.equal(textSchema({ max: 5, plain: true }).safeParse("a\u0001").success, false);
    assert.equal(textSchema({ max: 5 }).safeParse("").success, true);
  });

  it("emailSchema: domain labels of 1 to 63 characters, a letter or digit first and last (as format: email reads them)", () => {
    for (const ok of ["a@b.io", "a@b-c.io", "A.B+c@x.y-z.io", `a@${"b".repeat(63)}.io`])
      assert.equal(emailSchema.safeParse(ok).success, true, ok);
    for (const bad of ["a@h-.io", "a@-h.io", "a@x.h-.io", `a@${"b".repeat(64)}.io`, "a@b", "a..b@c.io", ".a@b.io"])
      assert.equal(emailSchema.safeParse(bad).success, false, bad);
  });

  it("PLAIN_SPACE is JavaScript's \\s without the control characters, over every UTF-16 unit", () => {
    const space = new RegExp(`^${PLAIN_SPACE}$`);
    for (let c = 0; c < 0x10000; c++) {
      const ch = String.fromCharCode(c);
      assert.equal(space.test(ch), /^\s$/.test(ch) && !/[\u0000-\u001f\u007f]/.test(ch), `U+${c.toString(16)}`);
    }
  });

  it("textPattern's notFirst (no lookahead) reads as the plain, non-blank pattern that does not start with it", () => {
    const withLookahead = new RegExp("^(?!\\$)" + textPattern(true, true).slice(1));
    const spelled = new RegExp(textPattern(true, true, "$"));
    const chars = fc.constantFrom("$", "a", " ", "\u00a0", "\u3000", "\t", "\u0001", "\u007f", "é", "😀", "\u2028");
    const text = fc.oneof(fc.string({ unit: chars, maxLength: 6 }), fc.string({ unit: "binary", maxLength: 6 }));
    fc.assert(
      fc.property(text, (s) => spelled.test(s) === withLookahead.test(s)),
      { numRuns: 20_000 },
    );
    assert.equal(spelled.test(" $a"), true);
    assert.equal(spelled.test("$a"), false);
    assert.equal(spelled.test("\u00a0"), false);
  });
});
