-- Webhook type `mattermost` (Vigil's own, src/webhooks/targets/mattermost.ts): the type column's
-- CHECK lists every entry of TARGETS (src/webhooks/targets/index.ts). The table is small (a few
-- webhooks per project), so re-validating it under the ALTER's lock is brief.

ALTER TABLE webhooks
  DROP CONSTRAINT webhooks_type_check,
  ADD CONSTRAINT webhooks_type_check CHECK (type IN ('http', 'discord', 'mattermost'));
