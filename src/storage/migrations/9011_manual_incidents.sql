-- Manual incidents (decisions.md "Status communication"; docs/uptime.md "Manual incidents"): an
-- incident a member opens on chosen monitors, with an impact and a workflow status, beside the
-- incidents monitors open themselves. A manual incident has no monitor_id; its monitors are
-- incident_monitors rows (a deleted monitor leaves the incident, the incident's delete removes them).
-- Each update records the status it moved the incident to (null on a monitor incident's updates).
ALTER TABLE incidents ALTER COLUMN monitor_id DROP NOT NULL;
ALTER TABLE incidents ADD COLUMN kind text NOT NULL DEFAULT 'monitor' CHECK (kind IN ('monitor', 'manual'));
ALTER TABLE incidents ADD COLUMN impact text CHECK (impact IN ('minor', 'major', 'critical'));
ALTER TABLE incidents ADD COLUMN stage text CHECK (stage IN ('investigating', 'identified', 'monitoring', 'resolved'));
ALTER TABLE incidents ADD CONSTRAINT incidents_kind_shape CHECK (
  (kind = 'monitor' AND monitor_id IS NOT NULL AND impact IS NULL AND stage IS NULL)
  OR (kind = 'manual' AND monitor_id IS NULL AND impact IS NOT NULL AND stage IS NOT NULL AND title IS NOT NULL)
);
-- The open manual incidents of a project (the cap counts them) and a project's incidents, newest first.
CREATE INDEX incidents_project_started_idx ON incidents (project_id, started_at DESC, id DESC);

CREATE TABLE incident_monitors (
  incident_id  text NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  monitor_id   text NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  project_id   text NOT NULL,
  PRIMARY KEY (incident_id, monitor_id)
);
CREATE INDEX incident_monitors_monitor_idx ON incident_monitors (monitor_id);

ALTER TABLE incident_updates ADD COLUMN status text
  CHECK (status IN ('investigating', 'identified', 'monitoring', 'resolved'));
-- Manual incidents reach `projects` through no cascade: the project purge finds incidents and their
-- updates by project_id (src/lifecycle/purge-store.ts), through these indexes.
CREATE INDEX incident_updates_project_idx ON incident_updates (project_id);
