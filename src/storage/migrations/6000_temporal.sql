-- Temporal mode (docs/temporal.md).
--
-- monitor_wakes: a transactional outbox of the monitor changes Temporal must hear of (a new or
-- earlier deadline, a status change, a pause, a deletion). The transaction that changes the monitor
-- upserts its row, so a change cannot commit without its wake; drainers on every node send the
-- signal and delete the row only if it was not upserted again meanwhile (seq). One row per monitor:
-- a newer change supersedes an older unsent one (the workflow re-reads the monitor anyway).
-- No foreign key: a deleted monitor's wake must outlive it (it ends the workflow).
CREATE SEQUENCE monitor_wakes_seq;
CREATE TABLE monitor_wakes (
  monitor_id   text PRIMARY KEY,
  -- 'start': the monitor has a deadline (signal-with-start); 'signal': wake a running workflow only.
  kind         text NOT NULL CHECK (kind IN ('start', 'signal')),
  seq          bigint NOT NULL DEFAULT nextval('monitor_wakes_seq'),
  -- A drainer's lease: another node takes the row over when it expires (the sender died).
  lease_until  timestamptz NOT NULL DEFAULT '-infinity',
  attempts     integer NOT NULL DEFAULT 0,
  created_at   timestamptz NOT NULL
);
CREATE INDEX monitor_wakes_lease_idx ON monitor_wakes (lease_until);

-- A delivery paused because its webhook was disabled (both runners): enabling resumes it at its
-- planned time (planned_at), not at once, and only paused ones (a Temporal workflow still sleeping
-- keeps its own timer).
ALTER TABLE webhook_deliveries ADD COLUMN paused_at timestamptz;
-- The reconciler's scan: unfinished deliveries handed over to Temporal.
CREATE INDEX webhook_deliveries_unfinished_idx ON webhook_deliveries (updated_at)
  WHERE status IN ('pending', 'retrying') AND next_attempt_at IS NULL AND paused_at IS NULL;

-- This deployment's identity: the default Temporal task queue is derived from it and the database
-- name, so two deployments sharing a Temporal namespace never serve each other's tasks.
CREATE TABLE deployment (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  id         uuid NOT NULL DEFAULT gen_random_uuid()
);
INSERT INTO deployment DEFAULT VALUES;
