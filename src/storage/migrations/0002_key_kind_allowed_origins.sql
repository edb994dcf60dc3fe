-- Browser ingestion (#17): an API key's kind, and the origins a project's publishable keys may be
-- used from. A publishable key (vk_pub_...) may only ingest events; it is meant to ship in a web page.
-- allowed_origins: normalised origins (scheme://host[:port]); empty means any origin.
ALTER TABLE api_keys ADD COLUMN kind text NOT NULL DEFAULT 'secret' CHECK (kind IN ('secret', 'publishable'));
ALTER TABLE projects ADD COLUMN allowed_origins text[] NOT NULL DEFAULT '{}';
