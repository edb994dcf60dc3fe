-- Deleting a project really removes its data (docs/lifecycle.md "Deleting a project").
--
-- * DELETE /v1/projects/:id deletes the project row and, in the same statement, writes its id here.
--   The row's cascade stays for what is small and must stop at once (members, API keys, sources,
--   monitors, webhooks, pages); everything else the project owned is removed afterwards by the
--   purge sweeper (src/lifecycle/purge.ts) in bounded batches, which deletes this row last.
-- * swept_from: when the sweeper first saw the row (after the delete committed).
CREATE TABLE deleted_projects (
  id          text        PRIMARY KEY,
  deleted_at  timestamptz NOT NULL,
  swept_from  timestamptz
);

-- The big tables no longer go with the project row: their cascade made the delete as slow as the
-- project was large, holding locks the whole time. The sweeper removes their rows instead.
ALTER TABLE users DROP CONSTRAINT IF EXISTS users_project_id_fkey;
ALTER TABLE groups DROP CONSTRAINT IF EXISTS groups_project_id_fkey;
ALTER TABLE metrics DROP CONSTRAINT IF EXISTS metrics_project_id_fkey;

-- Projects deleted before this migration left their rows in the tables without a foreign key: find
-- them cheaply (day rollups, registry versions, pending deltas, client ids) and queue them too.
INSERT INTO deleted_projects (id, deleted_at)
SELECT DISTINCT x.project_id, now()
FROM (
  SELECT project_id FROM analytics_rollups WHERE grain = 2
  UNION SELECT project_id FROM analytics_registry_versions
  UNION SELECT project_id FROM ingest_deltas
  UNION SELECT project_id FROM ingest_ids
) x
WHERE NOT EXISTS (SELECT 1 FROM projects p WHERE p.id = x.project_id);
