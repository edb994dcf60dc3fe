import assert from "node:assert/strict";
import type { ProjectFixture } from "../helpers/fixtures.js";
import type { TestApp } from "../helpers/app.js";

// What the status pages' subscriber tests share.

/** A monitor (an API key of `p` creates it) and a published page listing it, made by `p`'s owner. */
export async function monitorAndPage(
  t: TestApp,
  p: ProjectFixture,
  slug: string,
): Promise<{ monitorId: string; pageId: string }> {
  const m = await t.rest.post(
    `/v1/projects/${p.projectId}/monitors`,
    { name: `API ${slug}`, slug, expectedIntervalMs: 3_600_000 },
    { key: p.key },
  );
  assert.equal(m.status, 201, m.text);
  const pg = await t.rest.post(
    `/v1/projects/${p.projectId}/pages`,
    { slug, title: `Acme ${slug}`, published: true, monitors: [{ monitorId: m.body.data.id }] },
    { cookie: p.owner.cookie },
  );
  assert.equal(pg.status, 201, pg.text);
  return { monitorId: m.body.data.id, pageId: pg.body.data.id };
}
