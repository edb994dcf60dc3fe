-- Analytics column blocks: each ended project-hour of events, stored column by column (type,
-- userId and every active typed slot; format in src/analytics/blocks/format.ts), built in the
-- background from stored events and used by the planner only while `rows` equals the hour's
-- rollup count (events are append-only, so an equal count means the same events).
CREATE TABLE analytics_blocks (
  project_id text        NOT NULL,
  hour       timestamptz NOT NULL,
  rows       integer     NOT NULL,
  -- The top-level data keys whose slot columns the block carries.
  keys       text[]      NOT NULL,
  built_at   timestamptz NOT NULL,
  PRIMARY KEY (project_id, hour)
);

-- One row per column of a block (`type`, `user_id`, `data.<key>`), so that a query reads only the
-- columns it needs. Replaced together with their block (same transaction).
CREATE TABLE analytics_block_columns (
  project_id text        NOT NULL,
  hour       timestamptz NOT NULL,
  name       text        NOT NULL,
  body       bytea       NOT NULL,
  PRIMARY KEY (project_id, hour, name),
  FOREIGN KEY (project_id, hour) REFERENCES analytics_blocks (project_id, hour) ON DELETE CASCADE
);
