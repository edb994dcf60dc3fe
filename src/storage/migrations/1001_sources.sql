-- Sources: the `source` key sent with an event, resolved to a per-project id. A key seen for the
-- first time in a project creates its source inside the ingest transaction.
CREATE TABLE sources (
  project_id  text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key         text        NOT NULL,
  id          text        NOT NULL UNIQUE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, key)
);
