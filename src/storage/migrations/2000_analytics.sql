-- Analytics: rollups (per project, event type and minute/hour/day) and the per-project property
-- registry that assigns typed slots (events.n1..n8 / s1..s8) to the most used top-level data keys.

-- An ISO 8601 timestamp with a timezone as timestamptz; NULL for anything else (never an error),
-- so that gt/gte/lt/lte on strings compare times and skip values that are not timestamps.
CREATE FUNCTION analytics_try_timestamptz(v text) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  IF v IS NULL OR v !~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$' THEN
    RETURN NULL;
  END IF;
  RETURN v::timestamptz;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$;

-- grain: 0 = minute, 1 = hour, 2 = day; bucket = the UTC start of the minute/hour/day.
CREATE TABLE analytics_rollups (
  project_id text        NOT NULL,
  grain      smallint    NOT NULL,
  bucket     timestamptz NOT NULL,
  type       text        NOT NULL,
  count      bigint      NOT NULL,
  PRIMARY KEY (project_id, grain, bucket, type)
);

-- Events stored before this migration get their rollups now, so answers are identical from the start.
INSERT INTO analytics_rollups (project_id, grain, bucket, type, count)
SELECT e.project_id, g.grain, date_trunc(g.unit, e.ts, 'UTC'), e.type, count(*)
FROM events e CROSS JOIN (VALUES (0::smallint, 'minute'), (1::smallint, 'hour'), (2::smallint, 'day')) AS g(grain, unit)
GROUP BY 1, 2, 3, 4;

-- The property registry. state: 'backfilling' (ingestion fills the slot; the planner does not use
-- it yet) -> 'active' (every stored event has the slot filled; the planner may use it).
CREATE TABLE analytics_properties (
  project_id  text        NOT NULL,
  key         text        NOT NULL,
  kind        char(1)     NOT NULL CHECK (kind IN ('n', 's')),
  slot        smallint    NOT NULL CHECK (slot BETWEEN 1 AND 8),
  state       text        NOT NULL DEFAULT 'backfilling' CHECK (state IN ('backfilling', 'active')),
  assigned_at timestamptz NOT NULL,
  active_at   timestamptz,
  PRIMARY KEY (project_id, key),
  UNIQUE (project_id, kind, slot)
);

-- Bumped whenever a project's registry changes; the ingest hook checks it in its transaction.
CREATE TABLE analytics_registry_versions (
  project_id text   PRIMARY KEY,
  version    bigint NOT NULL DEFAULT 0
);
