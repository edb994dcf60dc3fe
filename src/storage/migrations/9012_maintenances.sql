-- Maintenance windows (decisions.md "Status communication"; docs/uptime.md "Maintenance windows"):
-- one-off (starts_at + ends_at) or recurring (cron + timezone + duration_ms). A window's current or
-- next occurrence is (occ_start, occ_end); `active` while it is in progress; due_at is the next
-- transition (occ_start when not active, occ_end when active, NULL when no occurrence is left):
-- the durable timer both runners wake for, as monitors.deadline_at is for deadlines.
CREATE TABLE maintenances (
  id           text        PRIMARY KEY,
  project_id   text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  title        text        NOT NULL,
  description  text        NOT NULL DEFAULT '',
  starts_at    timestamptz,
  ends_at      timestamptz,
  cron         text,
  timezone     text,
  duration_ms  bigint,
  occ_start    timestamptz,
  occ_end      timestamptz,
  active       boolean     NOT NULL DEFAULT false,
  due_at       timestamptz,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  CHECK ((starts_at IS NOT NULL AND ends_at IS NOT NULL AND cron IS NULL)
      OR (starts_at IS NULL AND ends_at IS NULL AND cron IS NOT NULL AND timezone IS NOT NULL AND duration_ms IS NOT NULL))
);
CREATE INDEX maintenances_project_idx ON maintenances (project_id, created_at, id);
CREATE INDEX maintenances_due_idx ON maintenances (due_at) WHERE due_at IS NOT NULL;

CREATE TABLE maintenance_monitors (
  maintenance_id  text NOT NULL REFERENCES maintenances(id) ON DELETE CASCADE,
  monitor_id      text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  PRIMARY KEY (maintenance_id, monitor_id)
);
CREATE INDEX maintenance_monitors_monitor_idx ON maintenance_monitors (monitor_id);

-- The claim of each occurrence's transition: a notice (maintenance.started / maintenance.completed)
-- is fired only by the transaction that inserts its row, so once per occurrence on any number of nodes.
CREATE TABLE maintenance_occurrences (
  maintenance_id  text        NOT NULL REFERENCES maintenances(id) ON DELETE CASCADE,
  starts_at       timestamptz NOT NULL,
  kind            text        NOT NULL CHECK (kind IN ('started', 'completed')),
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (maintenance_id, starts_at, kind)
);

-- Each monitor's maintenance periods (ended_at NULL while in progress), for history and uptime
-- figures, as monitor_pauses is for pauses. Kept when the window is deleted (its time stays excluded).
CREATE TABLE monitor_maintenances (
  monitor_id      text        NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  maintenance_id  text        NOT NULL,
  started_at      timestamptz NOT NULL,
  ended_at        timestamptz,
  PRIMARY KEY (monitor_id, maintenance_id, started_at)
);

-- Stored on the monitor so every reader (API, pages, both runners, the heartbeat path) agrees:
-- in_maintenance while an active window names it; maintenance_ended_at: the end of its last window
-- (the deadline counts from it, as from a resume).
ALTER TABLE monitors ADD COLUMN in_maintenance boolean NOT NULL DEFAULT false;
ALTER TABLE monitors ADD COLUMN maintenance_ended_at timestamptz;
