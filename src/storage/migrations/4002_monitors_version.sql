-- A version on every monitor row, bumped by a trigger on every UPDATE whoever writes it (heartbeats,
-- deadline checks, pause/resume, settings). The heartbeat fast path writes a steady heartbeat in one
-- autocommit statement with a compare-and-set on the version it last wrote, instead of a
-- transaction that locks the row first (BEGIN, SELECT ... FOR UPDATE, write, COMMIT).
ALTER TABLE monitors ADD COLUMN version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION monitors_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  RETURN NEW;
END $$;

CREATE TRIGGER monitors_version BEFORE UPDATE ON monitors FOR EACH ROW EXECUTE FUNCTION monitors_bump_version();
