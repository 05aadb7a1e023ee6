-- People: the users of each organization, their invitations and sessions, failed sign-ins and
-- second factors; and the scopes the roles brought in. Times are ms since the epoch.

-- email_key (the lower-cased email) is unique across the service: one sign-in form serves every
-- organization. group_ids is a JSON array of group ids; NULL: the whole organization.
-- totp_last_step is the newest TOTP time step used, so that no code is accepted twice.
CREATE TABLE users (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  email           TEXT NOT NULL,
  email_key       TEXT NOT NULL,
  name            TEXT NOT NULL,
  role            TEXT NOT NULL,
  group_ids       TEXT,
  status          TEXT NOT NULL,
  password_hash   TEXT,
  totp_secret     TEXT,
  totp_enabled    INTEGER NOT NULL,
  totp_last_step  INTEGER,
  sso             INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  last_login_at   INTEGER
) STRICT;
CREATE UNIQUE INDEX users_email_key ON users (email_key);
CREATE INDEX users_organization ON users (organization_id, created_at, id);

-- An invitation is kept by the SHA-256 of its token, never the token.
CREATE TABLE user_invitations (
  token_hash  TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  expires_at  INTEGER NOT NULL,
  created_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX user_invitations_user ON user_invitations (user_id);

-- A session is kept by the SHA-256 of its cookie's secret, never the secret.
CREATE TABLE user_sessions (
  id_hash         TEXT PRIMARY KEY,
  user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  organization_id TEXT NOT NULL,
  csrf_token      TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  last_seen_at    INTEGER NOT NULL,
  expires_at      INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX user_sessions_user ON user_sessions (user_id);

-- Failed sign-ins per email, for lockouts that hold across restarts (and, on PostgreSQL, nodes).
CREATE TABLE login_failures (
  email_key  TEXT NOT NULL,
  at         INTEGER NOT NULL
) STRICT;
CREATE INDEX login_failures_email ON login_failures (email_key, at);

-- Recovery codes by their SHA-256; each is deleted when used.
CREATE TABLE user_recovery_codes (
  user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code_hash  TEXT NOT NULL,
  PRIMARY KEY (user_id, code_hash)
) STRICT, WITHOUT ROWID;

-- The first admin key of each organization holds every scope, the new ones included.
UPDATE api_keys SET scopes = scopes || ' users audit:read commands dispatch alerts:write'
WHERE name = 'First admin key'
  AND ' ' || scopes || ' ' LIKE '% fleet:read %' AND ' ' || scopes || ' ' LIKE '% fleet:write %'
  AND ' ' || scopes || ' ' LIKE '% telemetry:read %' AND ' ' || scopes || ' ' LIKE '% telemetry:write %'
  AND ' ' || scopes || ' ' LIKE '% streams %' AND ' ' || scopes || ' ' LIKE '% admin %'
  AND ' ' || scopes || ' ' LIKE '% events:read %' AND ' ' || scopes || ' ' LIKE '% rules %'
  AND ' ' || scopes || ' ' LIKE '% webhooks %' AND ' ' || scopes || ' ' LIKE '% metrics:read %'
  AND ' ' || scopes || ' ' NOT LIKE '% users %'
  AND created_at = (SELECT min(created_at) FROM api_keys k WHERE k.organization_id = api_keys.organization_id);
