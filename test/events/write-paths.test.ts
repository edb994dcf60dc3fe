import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { COPY_MIN_ROWS } from "../../src/events/ingest.js";
import { useProject } from "../helpers/use.js";

// Both write paths of a group commit store exactly what was sent: small groups through one INSERT
// (json_to_recordset), large ones through COPY text format (its own escaping of \ tab CR LF and \N).

const { t, p } = useProject({ RATE_LIMIT_EVENTS_PER_MINUTE: "100000", RATE_LIMIT_BATCHES_PER_MINUTE: "100000" });

const HOSTILE = [
  "back\\slash",
  "tab\there",
  "new\nline",
  "cr\rlf",
  "\\N",
  "\\.",
  "quote\"s 'n'",
  "semi;colon -- DROP TABLE events",
  "émoji 🚀 中文",
  "\\\\t",
  "tail\\",
];

function events(n: number, tag: string) {
  return Array.from({ length: n }, (_, i) => {
    const s = HOSTILE[i % HOSTILE.length];
    return {
      type: `t ${s}`,
      userId: `u ${s}`,
      groupId: `g ${s}`,
      source: `src ${s}`.slice(0, 200),
      timestamp: new Date(Date.UTC(2024, 5, 1, 12, 0, 0, i)).toISOString(),
      data: { s, nested: { deep: [s, i, null, true, -1.5e-7] }, [`key ${s}`]: i },
      context: { note: s },
      tags: { run: tag, s },
    };
  });
}

async function roundTrip(n: number, tag: string) {
  const sent = events(n, tag);
  const r = await t.rest.post("/v1/events/batch", { events: sent }, { key: p.key });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.body.data.accepted, n, r.text);
  for (const i of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, n - 1]) {
    const id = r.body.data.events[i].id;
    const g = await t.rest.get(`/v1/projects/${p.projectId}/events/${id}`, { key: p.key });
    assert.equal(g.status, 200, g.text);
    const e = g.body.data;
    assert.deepEqual(
      [e.type, e.userId, e.groupId, e.timestamp, e.data, e.tags],
      [sent[i].type, sent[i].userId, sent[i].groupId, sent[i].timestamp, sent[i].data, sent[i].tags],
    );
    assert.equal(e.context.note, sent[i].context.note);
    assert.match(e.sourceId, /^src_/);
  }
  const listed = await t.rest.get(`/v1/projects/${p.projectId}/events?search=${encodeURIComponent(tag)}&limit=100`, {
    key: p.key,
  });
  assert.equal(listed.status, 200, listed.text);
}

describe("write paths", () => {
  it(`a small group (INSERT with json_to_recordset) stores hostile strings exactly`, async () => {
    await roundTrip(12, "small-group");
  });
  it(`a large group (>= ${COPY_MIN_ROWS} events: COPY) stores hostile strings exactly, and its identities and counts follow`, async () => {
    await roundTrip(COPY_MIN_ROWS + 50, "copy-group");
    const u = await t.rest.get(`/v1/projects/${p.projectId}/users/${encodeURIComponent("u tab\there")}`, {
      key: p.key,
    });
    assert.equal(u.status, 200, u.text);
    const c = await t.rest.post(
      `/v1/projects/${p.projectId}/analytics/count`,
      { time: { start: "2024-06-01T00:00:00Z", end: "2024-06-02T00:00:00Z" } },
      { key: p.key },
    );
    assert.equal(c.body.data.count, 12 + COPY_MIN_ROWS + 50);
  });
});
