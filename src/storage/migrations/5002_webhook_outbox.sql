-- A transactional outbox for event deliveries (docs/webhooks.md, "Triggers").
--
-- * The ingest transaction inserts ONE row per (ingest batch, watching webhook) holding the batch's
--   matching events as parallel arrays, instead of one webhook_deliveries row (three index entries)
--   per event: the outbox commits (or not) with the events, so it is exactly as durable as they are.
-- * A background expander on worker nodes claims rows (FOR UPDATE SKIP LOCKED), inserts their
--   webhook_deliveries rows and deletes the outbox row in the same transaction: each row is expanded
--   exactly once, across crashes (the transaction rolls back, the row stays) and nodes.
-- * id orders the rows (oldest first); ON DELETE CASCADE drops what a deleted webhook still had queued.
CREATE TABLE webhook_outbox (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  webhook_id   text NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  project_id   text NOT NULL,
  event_ids    uuid[] NOT NULL,
  event_types  text[] NOT NULL,
  event_ts     timestamptz[] NOT NULL,
  created_at   timestamptz NOT NULL,
  CHECK (cardinality(event_ids) = cardinality(event_types) AND cardinality(event_ids) = cardinality(event_ts))
);
-- The foreign key's ON DELETE CASCADE looks rows up by webhook.
CREATE INDEX webhook_outbox_webhook_idx ON webhook_outbox (webhook_id);
