-- Identities, maintained from stored events inside the ingest transaction (eventsCommitting hook),
-- so they commit atomically with the events that created them.
--
-- users: one row per (project, externalId). event_count is kept exact by the same transaction that
-- inserts the events. first/last_seen_at follow the events' own timestamps (and identify calls).
CREATE TABLE users (
  project_id     text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  external_id    text        NOT NULL,
  id             text        NOT NULL UNIQUE,
  properties     jsonb       NOT NULL DEFAULT '{}'::jsonb,
  event_count    bigint      NOT NULL DEFAULT 0,
  first_seen_at  timestamptz NOT NULL,
  last_seen_at   timestamptz NOT NULL,
  PRIMARY KEY (project_id, external_id)
);
CREATE INDEX users_project_last_seen_idx ON users (project_id, last_seen_at DESC, id DESC);

-- groups: created or touched by any event with a groupId; a `$group` event merges its data.
CREATE TABLE groups (
  project_id     text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  group_id       text        NOT NULL,
  properties     jsonb       NOT NULL DEFAULT '{}'::jsonb,
  event_count    bigint      NOT NULL DEFAULT 0,
  first_seen_at  timestamptz NOT NULL,
  last_seen_at   timestamptz NOT NULL,
  PRIMARY KEY (project_id, group_id)
);
