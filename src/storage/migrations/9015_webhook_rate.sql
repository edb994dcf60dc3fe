-- A webhook's rate (decisions.md "Notification channels and webhook management", issue #33 point 4:
-- `maxPerSecond`, deliveries beyond it wait, none is dropped). max_per_second: null means no limit.
-- webhook_send_windows counts, per rate-limited webhook, the sends granted in the current second
-- (epoch seconds, every node's claim takes from it: src/webhooks/rate.ts); one row per webhook,
-- overwritten each second, gone with its webhook.

ALTER TABLE webhooks
  ADD COLUMN max_per_second int CHECK (max_per_second BETWEEN 1 AND 1000);

CREATE TABLE webhook_send_windows (
  webhook_id text PRIMARY KEY REFERENCES webhooks(id) ON DELETE CASCADE,
  second     bigint NOT NULL,
  sent       int NOT NULL,
  granted    int NOT NULL
);
