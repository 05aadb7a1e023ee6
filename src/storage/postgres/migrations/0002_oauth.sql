-- OAuth 2.0: the keys that sign access tokens, the clients of each organization, and revoked
-- access tokens. Times are bigint ms since the epoch.

-- The key with retired_at NULL signs; a retired key stays published (JWKS) until every token it
-- signed has expired, then it is deleted. The unique index makes "one signer" hold across nodes:
-- two that race to create the first key cannot both succeed.
CREATE TABLE oauth_signing_keys (
  kid          text COLLATE "C" PRIMARY KEY,
  algorithm    text NOT NULL,
  private_jwk  text NOT NULL,
  public_jwk   text NOT NULL,
  created_at   bigint NOT NULL,
  retired_at   bigint
);
CREATE UNIQUE INDEX oauth_signing_keys_one_signer ON oauth_signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;
CREATE INDEX oauth_signing_keys_created ON oauth_signing_keys (created_at);

CREATE TABLE oauth_clients (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  secret_hash     bytea NOT NULL,
  scopes          text[] NOT NULL,
  created_at      bigint NOT NULL,
  created_by      text NOT NULL
);
CREATE INDEX oauth_clients_organization ON oauth_clients (organization_id, created_at);

-- A revoked access token is remembered by its jti until it would have expired anyway.
CREATE TABLE oauth_revoked_tokens (
  jti         text PRIMARY KEY,
  expires_at  bigint NOT NULL
);
CREATE INDEX oauth_revoked_tokens_expiry ON oauth_revoked_tokens (expires_at);
