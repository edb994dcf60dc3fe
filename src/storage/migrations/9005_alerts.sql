-- Alerts (src/alerts/; docs/alerts.md). Each alert owns a monitor (monitors.owned_by = 'alert'): its
-- name and slug are the monitor's, and deleting the monitor deletes the alert. `state` is the
-- decision state of src/alerts/model.ts (EvaluationState, JSON as it is); `next_at` the next due
-- evaluation (evaluation_offset_ms + k * every_ms since the epoch), which the schedulers scan.
ALTER TABLE monitors ADD COLUMN owned_by text CHECK (owned_by IN ('alert'));

CREATE TABLE alerts (
  id                    text        PRIMARY KEY,
  project_id            text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  monitor_id            text        NOT NULL UNIQUE REFERENCES monitors(id) ON DELETE CASCADE,
  query                 jsonb       NOT NULL,
  condition             jsonb       NOT NULL,
  window_ms             bigint      NOT NULL,
  every_ms              bigint      NOT NULL,
  for_ms                bigint      NOT NULL,
  resolve               jsonb,
  no_data               text        NOT NULL,
  min_samples           integer     NOT NULL,
  evaluation_offset_ms  bigint      NOT NULL,
  state                 jsonb       NOT NULL,
  next_at               timestamptz NOT NULL,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL
);
CREATE INDEX alerts_project_idx ON alerts (project_id, created_at DESC, id DESC);
CREATE INDEX alerts_next_idx ON alerts (next_at);

-- One row per evaluation: the primary key is its claim (one evaluation of an alert at a time `at`,
-- inserted in the transaction that stores the state it led to). The newest 1000 per alert are kept.
CREATE TABLE alert_evaluations (
  alert_id    text        NOT NULL REFERENCES alerts(id) ON DELETE CASCADE,
  project_id  text        NOT NULL,
  at          timestamptz NOT NULL,
  value       double precision,
  state       text        NOT NULL,
  PRIMARY KEY (alert_id, at)
);
