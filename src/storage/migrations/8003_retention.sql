-- Data retention (src/lifecycle/retention.ts; docs/lifecycle.md "Retention"): when the last enforcement pass
-- completed (any node), shown on project messages as retention.lastRunAt. One row; the pass itself keeps no
-- progress: every step deletes by "older than the cutoff", so a pass cut short is finished by the next.
CREATE TABLE retention_runs (
  id           smallint    PRIMARY KEY CHECK (id = 1),
  last_run_at  timestamptz NOT NULL
);
