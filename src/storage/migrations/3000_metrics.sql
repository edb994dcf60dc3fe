-- Metrics: a name registry, the points derived from $measure/$increment/$decrement events, and
-- rollups. Everything here is written by the metrics hook inside the ingest transaction that
-- inserts the events, so it commits atomically with them (see src/metrics/hook.ts).

-- One row per metric name in a project. The unique (project_id, name) key makes "a name keeps its
-- first type" race-safe. total / last_* make `current` a single-row read:
--   total       counter: all-time net change (increments minus decrements); measurement: unused (0)
--   last_value  measurement: value of the latest observation (by timestamp)
--   last_ts     timestamp of the latest point of either type (NULL until a point is stored)
CREATE TABLE metrics (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  project_id  text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name        text        NOT NULL,
  type        text        NOT NULL CHECK (type IN ('measurement', 'counter')),
  unit        text,
  total       float8      NOT NULL DEFAULT 0,
  last_value  float8,
  last_ts     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT metrics_project_name_key UNIQUE (project_id, name)
);

-- Raw points, keyed for (metric = project + name, time). v is signed: a measurement's value,
-- +value for an increment, -value for a decrement. op: 0 measure, 1 increment, 2 decrement.
-- event_id is the id of the event the point derives from (a second insert of the same event
-- would violate the key: nothing twice). v and op are included so range scans and exact
-- percentiles are index-only once the visibility map is set.
CREATE TABLE metric_points (
  metric_id  bigint      NOT NULL REFERENCES metrics(id) ON DELETE CASCADE,
  ts         timestamptz NOT NULL,
  event_id   uuid        NOT NULL,
  v          float8      NOT NULL,
  op         smallint    NOT NULL,
  tags       jsonb       NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (metric_id, ts, event_id) INCLUDE (v, op)
);

-- Rollups per level (1 minute, 2 hour, 3 day; buckets aligned to UTC) and per op, over the signed
-- values: count, sum, min, max. A range query reads whole days, then whole hours, then whole
-- minutes, and raw points only for the partial minutes at its two edges.
CREATE TABLE metric_rollups (
  metric_id  bigint      NOT NULL REFERENCES metrics(id) ON DELETE CASCADE,
  level      smallint    NOT NULL,
  bucket     timestamptz NOT NULL,
  op         smallint    NOT NULL,
  n          bigint      NOT NULL,
  sum        float8      NOT NULL,
  min        float8      NOT NULL,
  max        float8      NOT NULL,
  PRIMARY KEY (metric_id, level, bucket, op)
);
