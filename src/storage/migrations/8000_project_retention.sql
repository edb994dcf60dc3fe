-- Data lifecycle (decisions.md "Data lifecycle"): a project's own retention in days; NULL means the
-- operator's default (RETENTION_DAYS) applies, and with that unset too, data is kept forever.
ALTER TABLE projects ADD COLUMN retention_days integer CHECK (retention_days > 0);
