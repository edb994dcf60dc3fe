-- Uptime: heartbeat monitors, their heartbeats (raw and hourly rollups), incidents, pause periods and
-- the at-most-once notification records.
--
-- * deadline_at is the durable timer: set exactly when a deadline applies (status up, or unknown
--   after a resume of a monitor that has heartbeats), NULL otherwise. It always equals
--   deadlineOf(monitor) in src/uptime/model.ts. Detectors compare-and-set on (status, deadline_at).
-- * up_since is the start of the current up period (timeUp), NULL when not up.
CREATE TABLE monitors (
  id                    text        PRIMARY KEY,
  project_id            text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  slug                  text        NOT NULL,
  name                  text        NOT NULL,
  type                  text        NOT NULL CHECK (type IN ('heartbeat', 'http', 'worker', 'bot', 'cron', 'custom')),
  status                text        NOT NULL CHECK (status IN ('unknown', 'up', 'down', 'paused')),
  expected_interval_ms  bigint      NOT NULL,
  grace_period_ms       bigint      NOT NULL,
  metadata              jsonb       NOT NULL DEFAULT '{}'::jsonb,
  tags                  jsonb       NOT NULL DEFAULT '{}'::jsonb,
  last_heartbeat_at     timestamptz,
  first_heartbeat_at    timestamptz,
  deadline_at           timestamptz,
  up_since              timestamptz,
  resumed_at            timestamptz,
  created_at            timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL,
  UNIQUE (project_id, slug)
);
CREATE INDEX monitors_deadline_idx ON monitors (deadline_at) WHERE deadline_at IS NOT NULL;

-- Raw heartbeats: kept for UPTIME_RAW_RETENTION_DAYS; older windows read heartbeat_rollups.
CREATE TABLE heartbeats (
  id          text        NOT NULL,
  monitor_id  text        NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  at          timestamptz NOT NULL,
  status      text        NOT NULL CHECK (status IN ('up', 'down')),
  latency_ms  float8,
  metadata    jsonb       NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (monitor_id, at, id)
);
CREATE INDEX heartbeats_at_idx ON heartbeats (at);

-- One row per monitor and UTC hour, maintained in the heartbeat transaction.
CREATE TABLE heartbeat_rollups (
  monitor_id     text        NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  hour           timestamptz NOT NULL,
  total          bigint      NOT NULL,
  successful     bigint      NOT NULL,
  failed         bigint      NOT NULL,
  latency_count  bigint      NOT NULL,
  latency_sum    float8      NOT NULL,
  latency_min    float8,
  latency_max    float8,
  PRIMARY KEY (monitor_id, hour)
);

CREATE TABLE incidents (
  id           text        PRIMARY KEY,
  monitor_id   text        NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  project_id   text        NOT NULL,
  started_at   timestamptz NOT NULL,
  ended_at     timestamptz,
  duration_ms  bigint,
  title        text,
  description  text,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
CREATE INDEX incidents_monitor_idx ON incidents (monitor_id, started_at DESC);
-- At most one open incident per monitor, whatever the number of nodes.
CREATE UNIQUE INDEX incidents_one_open_idx ON incidents (monitor_id) WHERE ended_at IS NULL;

-- A notification is fired only by the transaction that inserts its row (incident.started / recovered).
CREATE TABLE incident_notifications (
  incident_id  text        NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  kind         text        NOT NULL CHECK (kind IN ('started', 'recovered')),
  created_at   timestamptz NOT NULL,
  PRIMARY KEY (incident_id, kind)
);

-- Pause periods (resumed_at NULL while paused), for history and uptime figures.
CREATE TABLE monitor_pauses (
  monitor_id  text        NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  paused_at   timestamptz NOT NULL,
  resumed_at  timestamptz,
  PRIMARY KEY (monitor_id, paused_at)
);
