// The pure parts of page management: model.ts decisions and requests.ts parsing, without a server.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, fromJson } from "@bufbuild/protobuf";
import { CreatePageRequestSchema, UpdatePageRequestSchema } from "../../gen/vigil/v1/pages_pb.js";
import { ApiError } from "../../src/shared/errors.js";
import { firstForeign, isEmptyPatch, MAX_PAGE_MONITORS } from "../../src/pages/model.js";
import { createInput, PAGE_SLUG_RE, updateInput } from "../../src/pages/requests.js";

const entry = (monitorId: string) => ({ monitorId, name: null, section: null });

/** The fields a 400 names. */
function fields(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError && err.status === 400, String(err));
    return (err.restDetails as { field: string }[]).map((d) => d.field);
  }
  assert.fail("no 400");
}

const update = (json: Record<string, unknown>) =>
  updateInput(fromJson(UpdatePageRequestSchema, { projectId: "p", pageId: "g", ...json } as never));

describe("page model", () => {
  it("firstForeign: the first entry whose monitor the project does not have", () => {
    const owned = new Set(["a", "b"]);
    assert.equal(firstForeign([], owned), -1);
    assert.equal(firstForeign([entry("a"), entry("b")], owned), -1);
    assert.equal(firstForeign([entry("a"), entry("x"), entry("y")], owned), 1);
    assert.equal(firstForeign([entry("__proto__")], owned), 0);
  });

  it("isEmptyPatch: only when no field is given (an empty monitors list is a change)", () => {
    assert.equal(isEmptyPatch({}), true);
    assert.equal(isEmptyPatch({ monitors: undefined, slug: undefined }), true);
    assert.equal(isEmptyPatch({ monitors: [] }), false);
    assert.equal(isEmptyPatch({ description: null }), false);
    assert.equal(isEmptyPatch({ published: false }), false);
  });
});

describe("page requests", () => {
  it("the slug rule is decisions.md's", () => {
    for (const ok of ["abc", "a-b", "---", "0ab", "a".repeat(64)]) assert.match(ok, PAGE_SLUG_RE);
    for (const bad of ["ab", "a".repeat(65), "Abc", "a_b", "a.b", "a b", "ѕtatus", "abc\n"])
      assert.doesNotMatch(bad, PAGE_SLUG_RE);
  });

  it("create: defaults, trimming, empty labels are none", () => {
    const input = createInput(
      create(CreatePageRequestSchema, {
        slug: "acme",
        title: "  Acme  ",
        description: "   ",
        monitors: [{ monitorId: "m1", name: " API ", section: "" }, { monitorId: "m2" }],
      }),
    );
    assert.deepEqual(input, {
      slug: "acme",
      title: "Acme",
      description: null,
      published: false,
      monitors: [
        { monitorId: "m1", name: "API", section: null },
        { monitorId: "m2", name: null, section: null },
      ],
    });
  });

  it("PATCH: monitors absent keeps (undefined), [] empties, null description clears", () => {
    assert.equal(update({ title: "x" }).monitors, undefined);
    assert.equal(update({ title: "x" }).description, undefined);
    assert.deepEqual(update({ monitors: [] }).monitors, []);
    assert.equal(update({ monitors: null }).monitors, undefined);
    assert.equal(update({ description: null }).description, null);
    assert.equal(update({ description: "Hi" }).description, "Hi");
    assert.deepEqual(update({ monitors: [{ monitorId: "m", name: null }] }).monitors, [entry("m")]);
  });

  it("PATCH monitors: every problem named monitors[i].field", () => {
    assert.deepEqual(
      fields(() => update({ monitors: [{ monitorId: "a", colour: 1, size: 2 }] })),
      ["monitors[0].colour", "monitors[0].size"],
    );
    assert.deepEqual(
      fields(() => update({ monitors: [{ monitorId: "a" }, 5, { name: "x" }, { monitorId: "a" }] })),
      ["monitors[1]", "monitors[2].monitorId", "monitors[3].monitorId"],
    );
    assert.deepEqual(
      fields(() =>
        update({ monitors: Array.from({ length: MAX_PAGE_MONITORS + 1 }, (_, i) => ({ monitorId: `${i}` })) }),
      ),
      ["monitors"],
    );
    assert.deepEqual(
      fields(() => update({ description: 5 })),
      ["description"],
    );
    assert.deepEqual(
      fields(() => update({ slug: "UPPER" })),
      ["slug"],
    );
  });
});
