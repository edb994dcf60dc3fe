-- The userId access path of the event list, as a derived record instead of a per-event index.
--
-- events_project_user_ts_idx took one btree insertion per event at a random position (one per
-- user), which cost PostgreSQL about 7 µs of its ~20 µs per ingested event in the batch benchmark.
-- event_user_hours holds one row per (project, user, UTC hour) in which the user has events,
-- written by the derived-records projector (src/events/user-hours.ts): one row per user and hour
-- instead of one index entry per event. A userId listing settles its project's pending deltas,
-- walks the user's hours newest first and reads each hour through the primary key.
CREATE TABLE event_user_hours (
  project_id  text        NOT NULL,
  user_id     text        NOT NULL,
  hour        timestamptz NOT NULL,
  PRIMARY KEY (project_id, user_id, hour)
);

INSERT INTO event_user_hours (project_id, user_id, hour)
SELECT DISTINCT project_id, user_id, to_timestamp(floor(extract(epoch FROM ts) / 3600) * 3600)
FROM events WHERE user_id IS NOT NULL;

DROP INDEX IF EXISTS events_project_user_ts_idx;
