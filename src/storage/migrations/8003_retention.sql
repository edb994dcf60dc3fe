-- Data retention (src/lifecycle/retention.ts; docs/lifecycle.md "Retention"): when the last enforcement pass
-- completed (any node), shown on project messages as retention.lastRunAt. One row; the pass itself keeps no
-- progress: every step deletes by "older than the cutoff", so a pass cut short is finished by the next.
CREATE TABLE retention_runs (
  id           smallint    PRIMARY KEY CHECK (id = 1),
  last_run_at  timestamptz NOT NULL
);

-- The pass deletes a project's event deliveries whose event expired; without this index each pass would
-- scan webhook_deliveries once per project with a retention. Partial: incident and test deliveries
-- (no event_ts) are not in it.
CREATE INDEX webhook_deliveries_event_ts_idx ON webhook_deliveries (project_id, event_ts) WHERE event_ts IS NOT NULL;
