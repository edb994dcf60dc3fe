-- Webhook subscribers of a status page (docs/pages.md "Webhook subscribers"): an owner or admin adds
-- a URL that receives the page's notices as signed JSON, through the same notices, queue (page_mails)
-- and sender as the email subscribers. A row has an email or a url, never both. The signing secret
-- is kept as the project webhooks keep theirs (the sender signs with it); it is shown once, when the
-- subscriber is added. An owner's subscriber needs no confirmation: confirmed_at is its creation.
ALTER TABLE page_subscribers
  ALTER COLUMN email DROP NOT NULL,
  ADD COLUMN url text,
  ADD COLUMN secret text,
  ADD CONSTRAINT page_subscribers_one_address CHECK ((email IS NULL) <> (url IS NULL));
CREATE UNIQUE INDEX page_subscribers_page_url_idx ON page_subscribers (page_id, url) WHERE url IS NOT NULL;
