-- Accounts, sessions, projects, members and API keys.

CREATE TABLE accounts (
  id            text PRIMARY KEY,
  email         text NOT NULL,
  name          text,
  password_hash text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX accounts_email_key ON accounts (lower(email));

-- Only a SHA-256 of the session token is stored; the cookie carries the token, signed.
CREATE TABLE sessions (
  token_hash  text PRIMARY KEY,
  account_id  text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX sessions_account_idx ON sessions (account_id);

CREATE TABLE projects (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  platform    text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE project_members (
  project_id  text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  account_id  text NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
  role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, account_id)
);
CREATE INDEX project_members_account_idx ON project_members (account_id);

-- Only the SHA-256 of the secret and its 7-character prefix are kept.
CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name         text NOT NULL,
  environment  text NOT NULL CHECK (environment IN ('production', 'development', 'preview')),
  prefix       text NOT NULL,
  key_hash     text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);
