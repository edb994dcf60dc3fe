-- Cron jobs (issue #32, decisions.md "Cron jobs and ping keys"): schedules, runs, maxRuntimeMs and
-- failureTolerance on monitors, and the runs table.
--
-- * schedule_cron/schedule_timezone: a scheduled monitor (both set) or an interval one (both NULL);
--   expected_interval_ms stays filled (kept for when the schedule is cleared) but is not used.
-- * last_success_start_at: the start of the last successful run (NULL: it came without a start).
-- * running_since: the start of the oldest run still running (NULL: none). With max_runtime_ms it
--   gives the run timeout; deadline_at holds the earlier of the deadline and that timeout
--   (dueAt() in src/uptime/model.ts), so both runners see a timeout like a deadline.
-- * consecutive_failures: failed runs since the last success (failure_tolerance: down at N+1).
ALTER TABLE monitors
  ADD COLUMN schedule_cron text,
  ADD COLUMN schedule_timezone text,
  ADD COLUMN max_runtime_ms bigint,
  ADD COLUMN failure_tolerance integer NOT NULL DEFAULT 0,
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
  ADD COLUMN last_success_start_at timestamptz,
  ADD COLUMN running_since timestamptz,
  ADD CONSTRAINT monitors_schedule_both CHECK ((schedule_cron IS NULL) = (schedule_timezone IS NULL));

-- One row per run: a start (running until its end, or timed_out at start + max_runtime_ms), or an
-- end without a start (started_at NULL). created_at (the first signal's arrival) orders the list.
CREATE TABLE monitor_runs (
  id          text        PRIMARY KEY,
  monitor_id  text        NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  run_id      text,
  started_at  timestamptz,
  ended_at    timestamptz,
  outcome     text        NOT NULL CHECK (outcome IN ('running', 'succeeded', 'failed', 'timed_out')),
  exit_code   integer,
  output      text,
  created_at  timestamptz NOT NULL
);
CREATE INDEX monitor_runs_list_idx ON monitor_runs (monitor_id, created_at DESC, id DESC);
CREATE INDEX monitor_runs_running_idx ON monitor_runs (monitor_id, started_at) WHERE outcome = 'running';
