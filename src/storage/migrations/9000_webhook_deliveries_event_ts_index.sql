-- The first migration numbered by the rule of docs/architecture.md "Storage" (a new file takes a
-- number above every existing one). It repairs two landed migrations that were edited afterwards,
-- so that every database ends with the schema a fresh one gets (test/storage/migrate.test.ts):
-- * 8003_retention.sql gained webhook_deliveries_event_ts_idx in 452ca92: a database that applied
--   its first version (99fefe5) never got the index.
-- * 8001_jobs.sql lost webhook_deliveries_event_idx (the same index under another name) in c532142:
--   a database that applied its first version (09a3528) carries both.
-- On a fresh database both statements do nothing.
CREATE INDEX IF NOT EXISTS webhook_deliveries_event_ts_idx ON webhook_deliveries (project_id, event_ts) WHERE event_ts IS NOT NULL;
DROP INDEX IF EXISTS webhook_deliveries_event_idx;
