-- Every heartbeat rewrites its monitor's row (last_heartbeat_at, deadline_at). With an index on
-- deadline_at each of those updates had to insert new entries into every index of the table; without
-- it, and with room left on each page, they are heap-only (HOT) updates. The scheduler's only
-- deadline query is a re-scan every 30 s of the deadlines due within its horizon, which reads most
-- rows of an active deployment anyway. The same room helps the hourly heartbeat rollups.
DROP INDEX IF EXISTS monitors_deadline_idx;
ALTER TABLE monitors SET (fillfactor = 70);
ALTER TABLE heartbeat_rollups SET (fillfactor = 70);
