-- Incident updates (decisions.md: Status pages): short public notes a member posts on an incident
-- ("Investigating", "Fixed, monitoring"), shown oldest first under the incident on every status page
-- that lists its monitor. They go with their incident (and so with its monitor).

CREATE TABLE incident_updates (
  id           text        PRIMARY KEY,
  incident_id  text        NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  project_id   text        NOT NULL,
  message      text        NOT NULL,
  created_at   timestamptz NOT NULL
);
CREATE INDEX incident_updates_incident_idx ON incident_updates (incident_id, created_at, id);
