-- Analytics: a narrow index that carries every column the slot-based fast paths read, so that a
-- window scan over slots (filters, group keys, numeric aggregations, distinct users) is an
-- index-only scan instead of reading the wide heap pages that hold data/context/tags.
--
-- * Key order (project_id, ts) serves the window range; the other columns are key columns (not
--   INCLUDE) so that `sN IS NULL` / `nN IS NULL` are index conditions: the few rows whose slot is
--   NULL (key absent or of another JSON type) are found through a bitmap on this index and only
--   they are read from the heap (for their JSON).
-- * Index-only scans need the visibility map: autovacuum sets it on insert-only partitions
--   (autovacuum_vacuum_insert_threshold/_scale_factor, PostgreSQL 13+); pages not yet vacuumed are
--   checked in the heap, so answers never depend on it, only speed.
-- * Created on the partitioned table, so every weekly partition (present and future) gets it.
CREATE INDEX events_analytics_scan_idx ON events
  (project_id, ts, type, user_id, s1, s2, s3, s4, s5, s6, s7, s8, n1, n2, n3, n4, n5, n6, n7, n8);
