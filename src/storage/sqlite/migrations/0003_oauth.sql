-- OAuth 2.0: the keys that sign access tokens, the clients of each organization, and revoked
-- access tokens. Times are ms since the epoch.

-- The newest key with retired_at NULL signs; a retired key stays published (JWKS) until every
-- token it signed has expired, then it is deleted.
CREATE TABLE oauth_signing_keys (
  kid          TEXT PRIMARY KEY,
  algorithm    TEXT NOT NULL,
  private_jwk  TEXT NOT NULL,
  public_jwk   TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  retired_at   INTEGER
) STRICT;
CREATE INDEX oauth_signing_keys_created ON oauth_signing_keys (created_at);

CREATE TABLE oauth_clients (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  secret_hash     BLOB NOT NULL,
  scopes          TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  created_by      TEXT NOT NULL
) STRICT;
CREATE INDEX oauth_clients_organization ON oauth_clients (organization_id, created_at);

-- A revoked access token is remembered by its jti until it would have expired anyway.
CREATE TABLE oauth_revoked_tokens (
  jti         TEXT PRIMARY KEY,
  expires_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX oauth_revoked_tokens_expiry ON oauth_revoked_tokens (expires_at);
