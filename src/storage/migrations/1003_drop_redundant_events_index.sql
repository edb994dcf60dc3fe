-- events_project_ts_idx (project_id, ts DESC, id DESC) duplicates the primary key
-- (project_id, ts, id): a btree serves the reverse order by scanning backwards. Dropping it
-- saves one index insertion per ingested event.
DROP INDEX IF EXISTS events_project_ts_idx;
