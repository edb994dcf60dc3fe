-- Status pages (decisions.md: Status pages; docs/pages.md). A page belongs to one project; its slug
-- is unique across the service (the public address /status/<slug>). page_monitors is the page's
-- ordered list; a monitor's rows go with it (ON DELETE CASCADE: "a deleted monitor disappears from
-- its pages"), and a page's with the page. A monitor of another project can never be listed: the
-- composite key to monitors (id, project_id) holds it at the database too.

CREATE TABLE pages (
  id           text        PRIMARY KEY,
  project_id   text        NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  slug         text        NOT NULL UNIQUE,
  title        text        NOT NULL,
  description  text,
  published    boolean     NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL
);
CREATE INDEX pages_project_idx ON pages (project_id, created_at, id);

CREATE UNIQUE INDEX monitors_id_project_idx ON monitors (id, project_id);

CREATE TABLE page_monitors (
  page_id      text    NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  project_id   text    NOT NULL,
  monitor_id   text    NOT NULL,
  position     integer NOT NULL,
  name         text,
  section      text,
  PRIMARY KEY (page_id, monitor_id),
  FOREIGN KEY (monitor_id, project_id) REFERENCES monitors (id, project_id) ON DELETE CASCADE
);
CREATE INDEX page_monitors_monitor_idx ON page_monitors (monitor_id);
