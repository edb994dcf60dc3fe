-- Status page subscribers (decisions.md "Status communication"; docs/pages.md "Subscribers"): an
-- address subscribes to one page, confirms through a single-use link (only the token's SHA-256 is
-- kept, like API keys), and is DELETED on unsubscribe (no flag, no address kept). A page's rows go
-- with the page, and so with its project.
CREATE TABLE page_subscribers (
  id                  text        PRIMARY KEY,
  page_id             text        NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  project_id          text        NOT NULL,
  email               text        NOT NULL,
  -- Until confirmed: the confirmation token's hash and its expiry (both NULL once confirmed).
  confirm_hash        text UNIQUE,
  confirm_expires_at  timestamptz,
  confirmed_at        timestamptz,
  created_at          timestamptz NOT NULL
);
CREATE UNIQUE INDEX page_subscribers_page_email_idx ON page_subscribers (page_id, lower(email));
CREATE INDEX page_subscribers_confirmed_idx ON page_subscribers (page_id) WHERE confirmed_at IS NOT NULL;

-- What a page's subscribers are told: one row per notice (an incident's start, update or
-- resolution, a maintenance window's start or end) and page, written in the transaction that
-- stored its cause, once per dedupe key; one page_mails row per confirmed subscriber at that time,
-- written in the same statement. A mail's row is deleted once the SMTP server accepted it (or it
-- failed for good); a crash before that sends it again after its lease (at least once, never lost).
CREATE TABLE page_notices (
  id          text        PRIMARY KEY,
  page_id     text        NOT NULL REFERENCES pages(id) ON DELETE CASCADE,
  project_id  text        NOT NULL,
  dedupe_key  text        NOT NULL,
  event_type  text        NOT NULL,
  payload     jsonb       NOT NULL,
  created_at  timestamptz NOT NULL,
  UNIQUE (page_id, dedupe_key)
);

CREATE TABLE page_mails (
  notice_id      text        NOT NULL REFERENCES page_notices(id) ON DELETE CASCADE,
  subscriber_id  text        NOT NULL REFERENCES page_subscribers(id) ON DELETE CASCADE,
  due_at         timestamptz NOT NULL,
  attempts       integer     NOT NULL DEFAULT 0,
  lease_token    text,
  PRIMARY KEY (notice_id, subscriber_id)
);
CREATE INDEX page_mails_due_idx ON page_mails (due_at);
CREATE INDEX page_mails_subscriber_idx ON page_mails (subscriber_id);
