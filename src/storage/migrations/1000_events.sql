-- Events: the store every read path (event list, analytics, metrics as $-events, webhooks) starts from.
--
-- * Partitioned by RANGE (ts), one partition per ISO week (Monday 00:00 UTC), created on demand by
--   the ingest path (name: events_pYYYYMMDD, the Monday of the week). Time windows prune partitions.
-- * id is a UUIDv7 whose 48-bit time prefix is the event's own timestamp (ms), so a lookup by id
--   knows its partition: WHERE project_id = $1 AND ts = <ts from id> AND id = $2.
-- * Keyset order for reading is (ts DESC, id DESC).
-- * n1..n8 / s1..s8 are typed slots for each project's most used top-level `data` keys, assigned by
--   the per-project property registry (analytics). The JSON in `data` stays the source of truth;
--   a slot is NULL when the key is absent or of the other type.
CREATE TABLE events (
  project_id  text        NOT NULL,
  ts          timestamptz NOT NULL,
  id          uuid        NOT NULL,
  type        text        NOT NULL,
  user_id     text,
  group_id    text,
  source_id   text,
  data        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  context     jsonb       NOT NULL DEFAULT '{}'::jsonb,
  tags        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  n1 float8, n2 float8, n3 float8, n4 float8, n5 float8, n6 float8, n7 float8, n8 float8,
  s1 text, s2 text, s3 text, s4 text, s5 text, s6 text, s7 text, s8 text,
  PRIMARY KEY (project_id, ts, id)
) PARTITION BY RANGE (ts);

CREATE INDEX events_project_ts_idx ON events (project_id, ts DESC, id DESC);
CREATE INDEX events_project_type_ts_idx ON events (project_id, type, ts DESC);
CREATE INDEX events_project_user_ts_idx ON events (project_id, user_id, ts DESC) WHERE user_id IS NOT NULL;
