-- Client-id claims are kept per key kind (decisions.md "Corrections from the second round"): a
-- publishable key can never read an event it did not send, nor claim an id away from a secret key.
-- `key_kind` is part of the claim's key: the same id sent by a secret key and by a publishable key
-- are two claims, each answered only from its own record. Metric points and heartbeats (secret
-- keys and sessions only) are 'secret'. Existing claims were all 'secret' or indistinguishable;
-- they stay 'secret' (a publishable repeat within their window is stored as its own).
ALTER TABLE ingest_ids ADD COLUMN key_kind text NOT NULL DEFAULT 'secret' CHECK (key_kind IN ('secret', 'publishable'));
ALTER TABLE ingest_ids DROP CONSTRAINT ingest_ids_pkey;
ALTER TABLE ingest_ids ADD CONSTRAINT ingest_ids_pkey PRIMARY KEY (project_id, kind, key_kind, client_id);
