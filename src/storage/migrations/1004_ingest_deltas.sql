-- Derived records (users, groups, analytics rollups) follow the stored events after acceptance
-- (src/shared/derived.ts): each ingest transaction adds, per project, one row of aggregated deltas;
-- a projector applies and deletes rows in one transaction (exactly once), merging many ingest groups
-- into one upsert per derived row. Concurrent ingest transactions then never wait for each other on
-- hot rows (a popular user, the current minute's rollup). Readers settle their project's rows first.
CREATE TABLE ingest_deltas (
  id          bigserial   PRIMARY KEY,
  project_id  text        NOT NULL,
  deltas      json        NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_deltas_project_idx ON ingest_deltas (project_id, id);
