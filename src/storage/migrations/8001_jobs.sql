-- Durable background jobs a request started (src/jobs/; docs/lifecycle.md "## Jobs"). The request
-- inserts its job in its own transaction and answers 202; a runner on a worker node claims it by
-- taking a session advisory lock on the job's id (PostgreSQL releases it the moment the holding
-- process dies, so another or a restarted node resumes the job at once; no lease timers) and moves
-- it pending -> running -> succeeded | failed. Each step of a job is idempotent.
-- params: what the job needs (user.delete: the user's ids); cleared when the job has succeeded, so
-- a finished deletion keeps no trace of whom it deleted.
CREATE TABLE jobs (
  id              text        PRIMARY KEY,
  project_id      text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind            text        NOT NULL,
  status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'succeeded', 'failed')),
  params          jsonb       NOT NULL DEFAULT '{}'::jsonb,
  events_deleted  bigint      NOT NULL DEFAULT 0,
  error           text,
  created_at      timestamptz NOT NULL,
  started_at      timestamptz,
  finished_at     timestamptz
);
-- The runner's queue: only unfinished jobs.
CREATE INDEX jobs_open_idx ON jobs (created_at, id) WHERE status IN ('pending', 'running');

-- A user's event webhook deliveries are found by (project_id, event_ts): the index of 8003_retention.sql.
