-- Webhooks and their deliveries (docs/webhooks.md).
--
-- * A delivery is inserted in the same transaction as what caused it (the ingest transaction, or
--   uptime's incident compare-and-set), so it is exactly as durable as the event or incident.
-- * next_attempt_at is the scheduler's queue: NULL when nothing is due (succeeded, abandoned,
--   paused by a disabled webhook, or handed to Temporal). A worker claims a due row by moving
--   next_attempt_at forward by a lease and setting claim_token (FOR UPDATE SKIP LOCKED); it records
--   the outcome only WHERE claim_token still matches. A crashed worker's lease simply falls due.
--   With Temporal, the scheduler only hands due rows to a workflow (next_attempt_at becomes NULL).
-- * (webhook_id, dedupe_key) makes an incident notification at most once per webhook.
-- * attempts is the attempt history, newest last: [{at, statusCode, durationMs, error, responseBody}].

CREATE TABLE webhooks (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name        text NOT NULL,
  type        text NOT NULL CHECK (type IN ('http', 'discord')),
  url         text NOT NULL,
  events      text[] NOT NULL,
  secret      text,
  enabled     boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX webhooks_project_idx ON webhooks (project_id, created_at, id);

CREATE TABLE webhook_deliveries (
  id               text PRIMARY KEY,
  webhook_id       text NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  project_id       text NOT NULL,
  event_id         text NOT NULL,
  event_type       text NOT NULL,
  payload          jsonb NOT NULL,
  dedupe_key       text,
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'succeeded', 'abandoned')),
  attempt_count    integer NOT NULL DEFAULT 0,
  attempt_limit    integer NOT NULL,
  attempts         jsonb NOT NULL DEFAULT '[]'::jsonb,
  next_attempt_at  timestamptz,
  claim_token      text,
  -- Temporal mode: the workflow's planned next attempt (shown as nextAttemptAt; the workflow owns the timer).
  planned_at       timestamptz,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  CONSTRAINT webhook_deliveries_dedupe_key UNIQUE (webhook_id, dedupe_key)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
