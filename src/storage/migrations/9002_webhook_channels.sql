-- Notification channels (decisions.md "Notification channels and webhook management";
-- src/webhooks/targets/): the types `slack`, `email` and `pagerduty` join the CHECK of the type
-- column, which lists every entry of TARGETS (src/webhooks/targets/index.ts). An `email` webhook
-- sends to "to" (1-10 addresses) and a `pagerduty` one to its routing_key (the Events API v2
-- integration key) instead of a url; every other type keeps its url. The table is small (a few
-- webhooks per project), so re-validating it under the ALTER's lock is brief.

ALTER TABLE webhooks
  ALTER COLUMN url DROP NOT NULL,
  ADD COLUMN "to" text[],
  ADD COLUMN routing_key text,
  DROP CONSTRAINT webhooks_type_check,
  ADD CONSTRAINT webhooks_type_check
    CHECK (type IN ('http', 'discord', 'slack', 'mattermost', 'email', 'pagerduty')),
  ADD CONSTRAINT webhooks_destination_check CHECK (CASE type
    WHEN 'email' THEN "to" IS NOT NULL AND cardinality("to") BETWEEN 1 AND 10 AND url IS NULL AND routing_key IS NULL
    WHEN 'pagerduty' THEN routing_key IS NOT NULL AND url IS NULL AND "to" IS NULL
    ELSE url IS NOT NULL AND "to" IS NULL AND routing_key IS NULL END);
