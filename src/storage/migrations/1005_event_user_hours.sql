-- The userId access path of the event list, as a derived record instead of a per-event index.
--
-- events_project_user_ts_idx took one btree insertion per event at a random position (one per
-- user), which cost PostgreSQL about 7 µs of its ~20 µs per ingested event in the batch benchmark.
-- event_user_hours holds one row per (project, user, UTC hour) in which the user has events, with
-- a bitmap of the minutes that have them (bit m: minute m of the hour). The derived-records
-- projector writes it (src/events/user-hours.ts): a row is updated only when a new minute appears.
-- A userId listing settles its project's pending deltas, walks the user's hours newest first and
-- reads only the marked minutes through the primary key.
CREATE TABLE event_user_hours (
  project_id  text        NOT NULL,
  user_id     text        NOT NULL,
  hour        timestamptz NOT NULL,
  minutes     bigint      NOT NULL,
  PRIMARY KEY (project_id, user_id, hour)
);

INSERT INTO event_user_hours (project_id, user_id, hour, minutes)
SELECT project_id, user_id, to_timestamp(h * 3600), bit_or(1::bigint << m)
FROM (
  SELECT project_id, user_id, floor(extract(epoch FROM ts) / 3600)::bigint AS h, (floor(extract(epoch FROM ts) / 60)::bigint % 60)::int AS m
  FROM events WHERE user_id IS NOT NULL
) x
GROUP BY project_id, user_id, h;

DROP INDEX IF EXISTS events_project_user_ts_idx;
