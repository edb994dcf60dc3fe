-- Idempotent ingestion (decisions.md "Idempotent ingestion and browser SDKs"): an event, metric point
-- or heartbeat may carry a client `id` (a UUID). The write that stores the record inserts its claim
-- here in the SAME transaction (or the same single statement); a claim that already exists means the
-- record is already stored: nothing new is written and the request is answered as the first one,
-- from `record_id` (events and metric points: the event's id; heartbeats: the monitor's id).
-- A claim lives 7 days (the events feature purges older ones by created_at); after that the same id
-- may be stored again. No foreign key: a deleted project's claims are purged with the rest.
CREATE TABLE ingest_ids (
  project_id  text        NOT NULL,
  kind        text        NOT NULL CHECK (kind IN ('event', 'metric', 'heartbeat')),
  client_id   uuid        NOT NULL,
  record_id   text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, kind, client_id)
);
CREATE INDEX ingest_ids_created_idx ON ingest_ids (created_at);
