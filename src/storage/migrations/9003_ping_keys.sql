-- Ping keys (#32, decisions.md "Cron jobs and ping keys"): an API key kind (vk_ping_...) that may only
-- send heartbeats, to any monitor of its project, and is the key of the header-less ping URLs
-- (/ping/:pingKey/:monitorSlug). Stored as a hash like every key.
ALTER TABLE api_keys
  DROP CONSTRAINT api_keys_kind_check,
  ADD CONSTRAINT api_keys_kind_check CHECK (kind IN ('secret', 'publishable', 'ping'));
