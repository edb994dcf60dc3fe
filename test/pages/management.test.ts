import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ListValueSchema, NullValue, ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { credentials } from "@grpc/grpc-js";
import { PageService } from "../../gen/vigil/v1/pages_pb.js";
import { GENEROUS_LIMITS } from "../helpers/app.js";
import { errorBody, project, signup, type Account, type ProjectFixture } from "../helpers/fixtures.js";
import type { Res } from "../helpers/rest.js";
import { useProject } from "../helpers/use.js";
import { grpcError, loadVigil, unary } from "../clients/grpc-js-util.js";

// Page management (decisions.md: Status pages; docs/pages.md) over REST on a real port, Connect and
// @grpc/grpc-js: the record, PATCH semantics (monitors `[]` empties, absent keeps; description null
// clears), the slug rule and its hostile variants, the service-wide unique slug (409), monitors of
// other projects, a deleted monitor leaving its pages, and who may do what.

let other: ProjectFixture;
let member: Account;
let admin: Account;
let stranger: Account;
/** Monitors of the project (api, db, web) and one of the other project. */
const mon: Record<string, string> = {};
let foreignMonitor: string;
const grpcClients: grpc.Client[] = [];

async function monitor(fx: ProjectFixture, name: string): Promise<string> {
  const r = await t.rest.post(`/v1/projects/${fx.projectId}/monitors`, { name }, { key: fx.key });
  assert.equal(r.status, 201, r.text);
  return r.body.data.id;
}

const { t, p } = useProject(GENEROUS_LIMITS, {}, async () => {
  other = await project(t.rest);
  [member, admin, stranger] = [await signup(t.rest, "member"), await signup(t.rest, "admin"), await signup(t.rest)];
  for (const [a, role] of [
    [member, "member"],
    [admin, "admin"],
  ] as const) {
    const r = await t.rest.post(
      `/v1/projects/${p.projectId}/members`,
      { email: a.email, role },
      { cookie: p.owner.cookie },
    );
    assert.equal(r.status, 201, r.text);
  }
  for (const name of ["api", "db", "web"]) mon[name] = await monitor(p, name);
  foreignMonitor = await monitor(other, "theirs");
});

after(() => {
  for (const c of grpcClients) c.close();
});

const base = () => `/v1/projects/${p.projectId}/pages`;
const owner = () => ({ cookie: p.owner.cookie });
let n = 0;
/** A fresh valid slug. */
const slug = (prefix = "page") => `${prefix}-${Date.now().toString(36)}-${n++}`;

async function createPage(body: Record<string, unknown> = {}, as = owner()): Promise<any> {
  const r = await t.rest.post(base(), { slug: slug(), title: "Status", ...body }, as);
  assert.equal(r.status, 201, r.text);
  return r.body.data;
}

/** A 400 `validation_failed` whose details name `field`; returns that detail's message. */
function refusedOn(r: Res, field: string): string {
  assert.equal(r.status, 400, r.text);
  const e = errorBody(r);
  assert.equal(e.code, "validation_failed");
  const d = (e.details as { field: string; message: string }[]).find((x) => x.field === field);
  assert.ok(d, `details name ${field}: ${JSON.stringify(e.details)}`);
  return d.message;
}

describe("page records", () => {
  it("creates a page: 201, the decisions.md record, defaults, monitors in the given order", async () => {
    const s = slug("acme");
    const r = await t.rest.post(
      base(),
      {
        slug: s,
        title: "  Acme status  ",
        description: "All our services",
        monitors: [
          { monitorId: mon.web, name: "Website", section: "Public" },
          { monitorId: mon.api },
          { monitorId: mon.db, section: "Internal" },
        ],
      },
      owner(),
    );
    assert.equal(r.status, 201, r.text);
    const page = r.body.data;
    assert.deepEqual(Object.keys(page).sort(), [
      "createdAt",
      "description",
      "id",
      "monitors",
      "published",
      "slug",
      "title",
      "updatedAt",
    ]);
    assert.match(page.id, /^pg_[0-9A-Za-z]{20}$/);
    assert.deepEqual(
      [page.slug, page.title, page.description, page.published],
      [s, "Acme status", "All our services", false],
    );
    assert.deepEqual(page.monitors, [
      { monitorId: mon.web, name: "Website", section: "Public" },
      { monitorId: mon.api, name: null, section: null },
      { monitorId: mon.db, name: null, section: "Internal" },
    ]);
    assert.equal(page.createdAt, page.updatedAt);
    const g = await t.rest.get(`${base()}/${page.id}`, owner());
    assert.equal(g.status, 200);
    assert.deepEqual(g.body.data, page);

    const bare = await createPage({ published: true });
    assert.deepEqual([bare.description, bare.monitors, bare.published], [null, [], true]);
  });

  it("lists the project's pages oldest first, with their monitors; other projects' are not there", async () => {
    const theirs = await t.rest.post(
      `/v1/projects/${other.projectId}/pages`,
      { slug: slug("theirs"), title: "Theirs" },
      { cookie: other.owner.cookie },
    );
    assert.equal(theirs.status, 201, theirs.text);
    const a = await createPage({ monitors: [{ monitorId: mon.api }] });
    const b = await createPage();
    const l = await t.rest.get(base(), owner());
    assert.equal(l.status, 200);
    const ids = l.body.data.map((x: { id: string }) => x.id);
    assert.ok(ids.indexOf(a.id) >= 0 && ids.indexOf(a.id) < ids.indexOf(b.id), "oldest first");
    assert.ok(!ids.includes(theirs.body.data.id));
    assert.deepEqual(l.body.data[ids.indexOf(a.id)], a);
  });

  it("PATCH changes only what it is given; monitors [] empties, absent keeps; description null clears", async () => {
    const page = await createPage({
      description: "Before",
      monitors: [{ monitorId: mon.api, name: "API" }, { monitorId: mon.db }],
    });
    const url = `${base()}/${page.id}`;
    const title = await t.rest.patch(url, { title: "Renamed" }, owner());
    assert.equal(title.status, 200, title.text);
    assert.deepEqual(
      { ...title.body.data, updatedAt: undefined },
      { ...page, title: "Renamed", updatedAt: undefined },
      "monitors, description, slug, published kept",
    );
    assert.ok(title.body.data.updatedAt >= page.updatedAt);

    const reorder = await t.rest.patch(
      url,
      {
        monitors: [
          { monitorId: mon.db, name: "Database", section: "Data" },
          { monitorId: mon.api, name: null },
        ],
      },
      owner(),
    );
    assert.equal(reorder.status, 200, reorder.text);
    assert.deepEqual(reorder.body.data.monitors, [
      { monitorId: mon.db, name: "Database", section: "Data" },
      { monitorId: mon.api, name: null, section: null },
    ]);

    const cleared = await t.rest.patch(url, { description: null, published: true }, owner());
    assert.equal(cleared.status, 200, cleared.text);
    assert.deepEqual([cleared.body.data.description, cleared.body.data.published], [null, true]);
    assert.equal(cleared.body.data.monitors.length, 2, "absent monitors: kept");

    const empty = await t.rest.patch(url, { monitors: [] }, owner());
    assert.equal(empty.status, 200, empty.text);
    assert.deepEqual(empty.body.data.monitors, []);
    assert.equal(empty.body.data.title, "Renamed");

    const again = await t.rest.patch(url, { description: "Back", monitors: [{ monitorId: mon.web }] }, owner());
    assert.deepEqual(
      [again.body.data.description, again.body.data.monitors],
      ["Back", [{ monitorId: mon.web, name: null, section: null }]],
    );
    const blank = await t.rest.patch(url, { description: "   " }, owner());
    assert.equal(blank.body.data.description, null, "an empty description is none");

    // An empty body changes nothing, not even updatedAt.
    const none = await t.rest.patch(url, {}, owner());
    assert.equal(none.status, 200);
    assert.deepEqual(none.body.data, blank.body.data);
    assert.deepEqual((await t.rest.get(url, owner())).body.data, blank.body.data);
  });

  it("DELETE answers 204; the page is then gone (404), a second DELETE is 404", async () => {
    const page = await createPage({ monitors: [{ monitorId: mon.api }] });
    const url = `${base()}/${page.id}`;
    const d = await t.rest.del(url, owner());
    assert.equal(d.status, 204);
    assert.equal(d.text, "");
    for (const r of [
      await t.rest.get(url, owner()),
      await t.rest.del(url, owner()),
      await t.rest.patch(url, { title: "x" }, owner()),
    ]) {
      assert.equal(r.status, 404, r.text);
      assert.equal(errorBody(r).code, "not_found");
    }
    // Its slug is free again.
    assert.equal((await t.rest.post(base(), { slug: page.slug, title: "Again" }, owner())).status, 201);
  });

  it("a deleted monitor disappears from its pages; the rest keep their order", async () => {
    const doomed = await monitor(p, "doomed");
    const page = await createPage({
      monitors: [{ monitorId: mon.api }, { monitorId: doomed, name: "Doomed" }, { monitorId: mon.db }],
    });
    const del = await t.rest.del(`/v1/projects/${p.projectId}/monitors/${doomed}`, { key: p.key });
    assert.equal(del.status, 204, del.text);
    const g = await t.rest.get(`${base()}/${page.id}`, owner());
    assert.deepEqual(
      g.body.data.monitors.map((m: { monitorId: string }) => m.monitorId),
      [mon.api, mon.db],
    );
    // Listing it again is now refused like any unknown monitor.
    const r = await t.rest.patch(`${base()}/${page.id}`, { monitors: [{ monitorId: doomed }] }, owner());
    refusedOn(r, "monitors[0].monitorId");
  });

  it("a monitor deleted while a PATCH lists it: the PATCH is 200 or 400, never 5xx, and the page never keeps it", async () => {
    const page = await createPage();
    for (let i = 0; i < 8; i++) {
      const m = await monitor(p, `racer ${i}`);
      const [patch, del] = await Promise.all([
        t.rest.patch(`${base()}/${page.id}`, { monitors: [{ monitorId: mon.api }, { monitorId: m }] }, owner()),
        t.rest.del(`/v1/projects/${p.projectId}/monitors/${m}`, { key: p.key }),
      ]);
      assert.ok(patch.status === 200 || patch.status === 400, `PATCH ${patch.status} ${patch.text}`);
      assert.equal(del.status, 204, del.text);
      const g = await t.rest.get(`${base()}/${page.id}`, owner());
      assert.ok(!g.text.includes(m), `the deleted monitor is still listed: ${g.text}`);
    }
  });
});

describe("slugs", () => {
  it("a slug is unique across the service: 409 on create (any project) and on PATCH", async () => {
    const page = await createPage();
    const dup = await t.rest.post(base(), { slug: page.slug, title: "Twin" }, owner());
    assert.equal(dup.status, 409, dup.text);
    const e = errorBody(dup);
    assert.equal(e.code, "conflict");
    assert.deepEqual(e.details, [{ field: "slug", message: "already used" }]);
    assert.ok(!/insert|select|constraint|pages_slug_key/i.test(dup.text), "no SQL in the answer");
    // Another tenant cannot take it either (the public address is one namespace).
    const theirs = await t.rest.post(
      `/v1/projects/${other.projectId}/pages`,
      { slug: page.slug, title: "Mine now" },
      { cookie: other.owner.cookie },
    );
    assert.equal(theirs.status, 409, theirs.text);
    assert.ok(!theirs.text.includes(p.projectId) && !theirs.text.includes(page.id), "nothing of the owner leaks");

    const second = await createPage();
    const clash = await t.rest.patch(`${base()}/${second.id}`, { slug: page.slug }, owner());
    assert.equal(clash.status, 409, clash.text);
    assert.equal((await t.rest.get(`${base()}/${second.id}`, owner())).body.data.slug, second.slug, "unchanged");
    // Its own slug again, or a new free one, is fine.
    assert.equal((await t.rest.patch(`${base()}/${second.id}`, { slug: second.slug }, owner())).status, 200);
    const moved = await t.rest.patch(`${base()}/${second.id}`, { slug: `${second.slug}-2` }, owner());
    assert.equal(moved.body.data.slug, `${second.slug}-2`);
  });

  it("accepts exactly decisions.md's rule: 3-64 of [a-z0-9-], dashes anywhere", async () => {
    const tag = Date.now().toString(36);
    for (const s of [
      `x${tag}`.slice(0, 3),
      `${tag}${"a".repeat(64)}`.slice(0, 64),
      `-${tag}-`,
      `0-${tag}`,
      `constructor-${tag}`,
    ]) {
      const r = await t.rest.post(base(), { slug: s, title: "Fine" }, owner());
      assert.equal(r.status, 201, `${s}: ${r.text}`);
      assert.equal(r.body.data.slug, s);
    }
  });

  const hostile: [string, unknown][] = [
    ["uppercase", "Status-Page"],
    ["one uppercase letter", "statuS"],
    ["two characters", "ab"],
    ["65 characters", "a".repeat(65)],
    ["10 KB", "a".repeat(10_000)],
    ["dots", ".."],
    ["a dot", "status.page"],
    ["a slash", "a/b"],
    ["an encoded slash", "a%2Fb"],
    ["a backslash", "a\\b"],
    ["an underscore (__proto__)", "__proto__"],
    ["spaces around", " status "],
    ["a Cyrillic lookalike", "ѕtatus"],
    ["fullwidth letters", "ｓｔａｔｕｓ"],
    ["a zero-width space", "sta\u200btus"],
    ["a dotless i", "statıs"],
    ["empty", ""],
    ["a number", 123],
    ["null", null],
    ["an array", ["status"]],
  ];
  for (const [label, value] of hostile) {
    it(`refuses a slug with ${label}: 400 naming slug, nothing stored (create and PATCH)`, async () => {
      const before = (await t.rest.get(base(), owner())).body.data.length;
      const r = await t.rest.post(base(), { slug: value, title: "Hostile" }, owner());
      refusedOn(r, "slug");
      assert.equal((await t.rest.get(base(), owner())).body.data.length, before);
      if (value === null) return; // null in a PATCH is "not given" (proto3 JSON), answered unchanged
      const page = await createPage();
      const u = await t.rest.patch(`${base()}/${page.id}`, { slug: value }, owner());
      refusedOn(u, "slug");
    });
  }

  it("NUL and lone surrogates in a slug are refused at the edge, naming slug", async () => {
    refusedOn(await t.rest.post(base(), { slug: "abc\u0000def", title: "x" }, owner()), "slug");
    refusedOn(await t.rest.post(base(), { slug: "abc\ud800", title: "x" }, owner()), "slug");
  });

  it("an uppercase slug is not lowercased: the lowercase one stays free", async () => {
    const s = slug("case");
    refusedOn(await t.rest.post(base(), { slug: s.toUpperCase(), title: "x" }, owner()), "slug");
    assert.equal((await t.rest.post(base(), { slug: s, title: "x" }, owner())).status, 201);
  });
});

describe("fields and monitors", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["no title", { title: undefined }, "title"],
    ["a blank title", { title: "   " }, "title"],
    ["a title of 201 characters", { title: "t".repeat(201) }, "title"],
    ["a control character in the title", { title: "bell\u0007" }, "title"],
    ["a title of the wrong type", { title: 7 }, "title"],
    ["a description of 2,001 characters", { description: "d".repeat(2001) }, "description"],
    ["published as a string", { published: "yes" }, "published"],
    ["monitors as an object", { monitors: { monitorId: "x" } }, "monitors"],
    ["101 monitors", { monitors: Array.from({ length: 101 }, (_, i) => ({ monitorId: `mon_${i}` })) }, "monitors"],
    ["an entry without monitorId", { monitors: [{ name: "x" }] }, "monitors[0].monitorId"],
    ["a display name of 101 characters", { monitors: [{ monitorId: "m", name: "n".repeat(101) }] }, "monitors[0].name"],
    ["a control character in a section", { monitors: [{ monitorId: "m", section: "a\nb" }] }, "monitors[0].section"],
    ["a NUL in a display name", { monitors: [{ monitorId: "m", name: "a\u0000" }] }, "monitors[0].name"],
  ];
  for (const [label, body, field] of cases) {
    it(`refuses ${label} with 400 naming ${field}`, async () => {
      refusedOn(await t.rest.post(base(), { slug: slug(), title: "T", ...body }, owner()), field);
    });
  }

  it("accepts the limits exactly: title 200, description 2,000, 100 monitors, names of 100", async () => {
    const many: { monitorId: string }[] = [];
    for (let i = 0; i < 100; i++) many.push({ monitorId: await monitor(p, `bulk ${i}`) });
    const page = await createPage({
      title: "t".repeat(200),
      description: "d".repeat(2000),
      monitors: many.map((m, i) => (i === 0 ? { ...m, name: "n".repeat(100), section: "s".repeat(100) } : m)),
    });
    assert.equal(page.monitors.length, 100);
    assert.deepEqual(
      page.monitors.map((m: { monitorId: string }) => m.monitorId),
      many.map((m) => m.monitorId),
    );
    for (const m of many) await t.rest.del(`/v1/projects/${p.projectId}/monitors/${m.monitorId}`, { key: p.key });
    assert.deepEqual((await t.rest.get(`${base()}/${page.id}`, owner())).body.data.monitors, []);
  });

  it("a monitor listed twice is a 400 naming the second entry", async () => {
    const r = await t.rest.post(
      base(),
      { slug: slug(), title: "T", monitors: [{ monitorId: mon.api }, { monitorId: mon.db }, { monitorId: mon.api }] },
      owner(),
    );
    assert.match(refusedOn(r, "monitors[2].monitorId"), /twice/);
  });

  it("another project's monitor is refused exactly like an unknown one, on create and PATCH", async () => {
    const messages: string[] = [];
    for (const id of [foreignMonitor, "mon_doesnotexist000000", "__proto__", "x".repeat(500)]) {
      const r = await t.rest.post(
        base(),
        { slug: slug(), title: "T", monitors: [{ monitorId: mon.api }, { monitorId: id }] },
        owner(),
      );
      messages.push(`${refusedOn(r, "monitors[1].monitorId")} | ${errorBody(r).message}`);
      assert.ok(!r.text.includes(other.projectId), "no other tenant's project id");
    }
    assert.equal(new Set(messages).size, 1, `one answer for all: ${messages.join(" / ")}`);
    const page = await createPage({ monitors: [{ monitorId: mon.api }] });
    const u = await t.rest.patch(`${base()}/${page.id}`, { monitors: [{ monitorId: foreignMonitor }] }, owner());
    refusedOn(u, "monitors[0].monitorId");
    assert.deepEqual(
      (await t.rest.get(`${base()}/${page.id}`, owner())).body.data.monitors,
      page.monitors,
      "unchanged",
    );
  });

  it("PATCH monitors is checked as JSON: unknown keys, wrong types, non-objects are 400s naming the entry", async () => {
    const page = await createPage({ monitors: [{ monitorId: mon.api }] });
    const url = `${base()}/${page.id}`;
    const patch = (body: unknown) => t.rest.patch(url, body, owner());
    refusedOn(await patch({ monitors: [{ monitorId: mon.api, colour: "red" }] }), "monitors[0].colour");
    refusedOn(
      await patch(JSON.parse(`{"monitors": [{"monitorId": "${mon.api}", "__proto__": "x"}]}`)),
      "monitors[0].__proto__",
    );
    refusedOn(await patch({ monitors: [{ monitorId: mon.api }, "x"] }), "monitors[1]");
    refusedOn(await patch({ monitors: [{ monitorId: mon.api }, null] }), "monitors[1]");
    refusedOn(await patch({ monitors: [{ monitorId: 5 }] }), "monitors[0].monitorId");
    refusedOn(await patch({ monitors: [{ monitorId: mon.api, name: 5 }] }), "monitors[0].name");
    refusedOn(await patch({ monitors: [{ monitorId: mon.api, name: { a: 1 } }] }), "monitors[0].name");
    refusedOn(await patch({ monitors: [{ monitorId: mon.api, section: "a\u0000" }] }), "monitors[0].section");
    refusedOn(await patch({ monitors: [{ monitorId: mon.api }, { monitorId: mon.api }] }), "monitors[1].monitorId");
    refusedOn(await patch({ monitors: Array.from({ length: 101 }, (_, i) => ({ monitorId: `m${i}` })) }), "monitors");
    refusedOn(await patch({ description: 5 }), "description");
    refusedOn(await patch({ description: { text: "x" } }), "description");
    refusedOn(await patch({ description: ["x"] }), "description");
    for (const body of [{ monitors: "x" }, { monitors: 5 }, { monitors: { a: 1 } }, { monitors: true }])
      assert.equal(refusedOn(await patch(body), "monitors"), "must be a JSON array");
    assert.deepEqual((await t.rest.get(url, owner())).body.data, page, "nothing changed");
  });

  it("holds at most 100 pages per project (409 past it)", async () => {
    const q = await project(t.rest);
    for (let i = 0; i < 100; i++) {
      const r = await t.rest.post(
        `/v1/projects/${q.projectId}/pages`,
        { slug: slug("cap"), title: "x" },
        { cookie: q.owner.cookie },
      );
      assert.equal(r.status, 201, r.text);
    }
    const over = await t.rest.post(
      `/v1/projects/${q.projectId}/pages`,
      { slug: slug("cap"), title: "x" },
      { cookie: q.owner.cookie },
    );
    assert.equal(over.status, 409, over.text);
    assert.equal(errorBody(over).code, "conflict");
  });
});

describe("access", () => {
  it("owners and admins write, members read, strangers and API keys do not", async () => {
    const page = await createPage({ monitors: [{ monitorId: mon.api }] });
    const url = `${base()}/${page.id}`;
    // admin: every operation
    const byAdmin = await createPage({}, { cookie: admin.cookie });
    assert.equal((await t.rest.patch(url, { title: "By admin" }, { cookie: admin.cookie })).status, 200);
    assert.equal((await t.rest.del(`${base()}/${byAdmin.id}`, { cookie: admin.cookie })).status, 204);
    // member: reads only
    assert.equal((await t.rest.get(base(), { cookie: member.cookie })).status, 200);
    assert.deepEqual((await t.rest.get(url, { cookie: member.cookie })).body.data.title, "By admin");
    const writes: [string, string, unknown?][] = [
      ["POST", base(), { slug: slug(), title: "x" }],
      ["PATCH", url, { title: "by member" }],
      ["DELETE", url],
    ];
    for (const [m, path, body] of writes) {
      const r = await t.rest.req(m, path, { cookie: member.cookie, body });
      assert.equal(r.status, 403, `${m} as member: ${r.text}`);
      assert.equal(errorBody(r).code, "forbidden");
    }
    // API keys (even the project's own): 403 on every page route, reads too.
    for (const [m, path, body] of [["GET", base()], ["GET", url], ...writes] as [string, string, unknown?][]) {
      const k = await t.rest.req(m, path, { key: p.key, body });
      assert.equal(k.status, 403, `${m} ${path} with the project's key: ${k.text}`);
      const self = await t.rest.req(m, path.replace(p.projectId, "self"), { key: p.key, body });
      assert.ok(self.status === 403 || self.status === 404, `${m} self: ${self.status}`);
      // A non-member session: the project does not exist for it.
      const s = await t.rest.req(m, path, { cookie: stranger.cookie, body });
      assert.equal(s.status, 404, `${m} ${path} as a stranger: ${s.text}`);
      const none = await t.rest.req(m, path, { body });
      assert.equal(none.status, 401, `${m} ${path} without credentials`);
    }
    const g = await t.rest.get(url, owner());
    assert.equal(g.body.data.title, "By admin", "no refused write changed anything");
    assert.equal(g.body.data.monitors.length, 1);
  });

  it("another tenant's page ids are 404 through either project", async () => {
    const page = await createPage();
    for (const [m, body] of [["GET"], ["PATCH", { title: "mine" }], ["DELETE"]] as [string, unknown?][]) {
      // The other owner, through their own project with our page's id.
      const own = await t.rest.req(m, `/v1/projects/${other.projectId}/pages/${page.id}`, {
        cookie: other.owner.cookie,
        body,
      });
      assert.equal(own.status, 404, `${m} through their project: ${own.text}`);
      assert.equal(errorBody(own).code, "not_found");
      // ... and through ours (not a member).
      const ours = await t.rest.req(m, `${base()}/${page.id}`, { cookie: other.owner.cookie, body });
      assert.equal(ours.status, 404, `${m} through our project: ${ours.text}`);
    }
    assert.equal((await t.rest.get(`${base()}/${page.id}`, owner())).body.data.title, page.title);
    // Hostile page ids are plain 404s.
    for (const id of ["__proto__", "constructor", "pg_' OR '1'='1", "a".repeat(2000), "💥"]) {
      const r = await t.rest.get(`${base()}/${encodeURIComponent(id)}`, owner());
      assert.equal(r.status, 404, `${id}: ${r.text}`);
    }
  });
});

describe("over gRPC", () => {
  it("Connect and gRPC (connect-es): create, get, list, PATCH monitors [] vs absent; a member's write is PERMISSION_DENIED", async () => {
    for (const transport of [
      createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: t.url }),
    ]) {
      const c = createClient(PageService, transport);
      const headers = { cookie: p.owner.cookie };
      const s = slug("rpc");
      const r = await c.createPage(
        {
          projectId: p.projectId,
          slug: s,
          title: "RPC",
          monitors: [{ monitorId: mon.api, name: "API" }, { monitorId: mon.db }],
        },
        { headers },
      );
      const id = r.data!.id;
      assert.equal(r.data!.slug, s);
      assert.equal(r.data!.published, false);
      assert.deepEqual(
        r.data!.monitors.map((m) => [m.monitorId, m.name, m.section]),
        [
          [mon.api, "API", undefined],
          [mon.db, undefined, undefined],
        ],
      );
      assert.equal((await c.getPage({ projectId: p.projectId, pageId: id }, { headers })).data!.title, "RPC");
      assert.ok(
        (await c.listPages({ projectId: p.projectId }, { headers: { cookie: member.cookie } })).data.some(
          (x) => x.id === id,
        ),
      );

      // Absent monitors (no ListValue) keep the list; a null Value clears the description.
      const kept = await c.updatePage(
        {
          projectId: p.projectId,
          pageId: id,
          title: "Kept",
          description: create(ValueSchema, { kind: { case: "nullValue", value: NullValue.NULL_VALUE } }),
        },
        { headers },
      );
      assert.equal(kept.data!.monitors.length, 2);
      assert.equal(kept.data!.description, undefined);
      const described = await c.updatePage(
        {
          projectId: p.projectId,
          pageId: id,
          description: create(ValueSchema, { kind: { case: "stringValue", value: "Hi" } }),
        },
        { headers },
      );
      assert.equal(described.data!.description, "Hi");
      // An empty ListValue empties it.
      const emptied = await c.updatePage(
        { projectId: p.projectId, pageId: id, monitors: create(ListValueSchema, { values: [] }) },
        { headers },
      );
      assert.deepEqual(emptied.data!.monitors, []);
      // A ListValue of structs sets it; a Value with no kind in it is a 400 naming the entry.
      const entry = (monitorId: string) =>
        create(ValueSchema, {
          kind: {
            case: "structValue",
            value: { fields: { monitorId: create(ValueSchema, { kind: { case: "stringValue", value: monitorId } }) } },
          },
        });
      const set = await c.updatePage(
        { projectId: p.projectId, pageId: id, monitors: create(ListValueSchema, { values: [entry(mon.web)] }) },
        { headers },
      );
      assert.deepEqual(
        set.data!.monitors.map((m) => m.monitorId),
        [mon.web],
      );
      await assert.rejects(
        c.updatePage(
          {
            projectId: p.projectId,
            pageId: id,
            monitors: create(ListValueSchema, { values: [entry(mon.web), entry("")] }),
          },
          { headers },
        ),
        (e: unknown) =>
          e instanceof ConnectError && e.code === Code.InvalidArgument && /monitors\[1\]\.monitorId/.test(e.rawMessage),
      );
      await assert.rejects(
        c.createPage({ projectId: p.projectId, slug: "UPPER", title: "x" }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.InvalidArgument,
      );
      await assert.rejects(
        c.createPage({ projectId: p.projectId, slug: s, title: "x" }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.AlreadyExists,
      );
      await assert.rejects(
        c.updatePage({ projectId: p.projectId, pageId: id, title: "member" }, { headers: { cookie: member.cookie } }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.PermissionDenied,
      );
      await assert.rejects(
        c.getPage({ projectId: p.projectId, pageId: id }, { headers: { authorization: `Bearer ${p.key}` } }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.PermissionDenied,
      );
      await c.deletePage({ projectId: p.projectId, pageId: id }, { headers });
      await assert.rejects(
        c.getPage({ projectId: p.projectId, pageId: id }, { headers }),
        (e: unknown) => e instanceof ConnectError && e.code === Code.NotFound,
      );
    }
  });

  it("a Value with no kind in the monitors ListValue (binary gRPC only) is a 400 naming the entry", async () => {
    const c = createClient(PageService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { cookie: p.owner.cookie };
    const page = await createPage({ monitors: [{ monitorId: mon.api }] });
    await assert.rejects(
      c.updatePage(
        {
          projectId: p.projectId,
          pageId: page.id,
          monitors: create(ListValueSchema, { values: [create(ValueSchema)] }),
        },
        { headers },
      ),
      (e: unknown) =>
        e instanceof ConnectError && e.code === Code.InvalidArgument && /monitors\[0\]/.test(e.rawMessage),
    );
    // A description Value with no kind is no description given: unchanged.
    const r = await c.updatePage(
      { projectId: p.projectId, pageId: page.id, description: create(ValueSchema) },
      { headers },
    );
    assert.equal(r.data!.monitors.length, 1);
  });

  it("@grpc/grpc-js (definitions from proto/): create, get, list, PATCH with a ListValue; PERMISSION_DENIED for a member", async () => {
    const services = loadVigil();
    const client = new services.PageService(`127.0.0.1:${t.port}`, credentials.createInsecure());
    grpcClients.push(client);
    const md = { cookie: p.owner.cookie };
    const s = slug("grpcjs");
    const created = await unary(client, "createPage")(
      {
        projectId: p.projectId,
        slug: s,
        title: "grpc-js",
        published: true,
        monitors: [{ monitorId: mon.db, section: "Data" }],
      },
      md,
    );
    const page = created.res.data;
    assert.equal(page.slug, s);
    assert.equal(page.published, true);
    assert.equal(page.monitors[0].monitorId, mon.db);
    assert.equal(page.monitors[0].section, "Data");
    const got = await unary(client, "getPage")({ projectId: p.projectId, pageId: page.id }, md);
    assert.equal(got.res.data.title, "grpc-js");
    const listed = await unary(client, "listPages")({ projectId: p.projectId }, { cookie: member.cookie });
    assert.ok(listed.res.data.some((x: { id: string }) => x.id === page.id));
    const patched = await unary(client, "updatePage")(
      {
        projectId: p.projectId,
        pageId: page.id,
        monitors: {
          values: [
            { structValue: { fields: { monitorId: { stringValue: mon.api }, name: { stringValue: "API" } } } },
            { structValue: { fields: { monitorId: { stringValue: mon.web }, section: { nullValue: 0 } } } },
          ],
        },
      },
      md,
    );
    assert.deepEqual(
      // proto-loader may read an unset optional string as "" (its defaults) or leave it out.
      patched.res.data.monitors.map((m: { monitorId: string; name?: string }) => [m.monitorId, m.name || null]),
      [
        [mon.api, "API"],
        [mon.web, null],
      ],
    );
    const kept = await unary(client, "updatePage")({ projectId: p.projectId, pageId: page.id, title: "T2" }, md);
    assert.equal(kept.res.data.monitors.length, 2, "no ListValue: the list is kept");
    const denied = await grpcError(
      unary(client, "deletePage")({ projectId: p.projectId, pageId: page.id }, { cookie: member.cookie }),
    );
    assert.equal(denied.code, 7, `PERMISSION_DENIED, got ${denied.code} ${denied.details}`);
    const foreign = await grpcError(
      unary(client, "createPage")(
        { projectId: p.projectId, slug: slug(), title: "x", monitors: [{ monitorId: foreignMonitor }] },
        md,
      ),
    );
    assert.equal(foreign.code, 3, `INVALID_ARGUMENT, got ${foreign.code} ${foreign.details}`);
    const gone = await grpcError(unary(client, "getPage")({ projectId: other.projectId, pageId: page.id }, md));
    assert.equal(gone.code, 5, "NOT_FOUND");
  });
});
