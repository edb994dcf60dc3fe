-- Event deliveries reference their event (project_id, ts, id: the events primary key) instead of
-- copying it, so the ingest transaction writes a small row per delivery; the body is built from the
-- stored event at send time. Incident and test deliveries keep their payload. The at-most-once key
-- only exists for incident notifications, so its index is partial.
ALTER TABLE webhook_deliveries ADD COLUMN event_ts timestamptz;
ALTER TABLE webhook_deliveries ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_dedupe_key;
CREATE UNIQUE INDEX webhook_deliveries_dedupe_key ON webhook_deliveries (webhook_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
