-- Single sign-on: each organization's OpenID provider, and the sign-ins under way. Times are ms
-- since the epoch.

-- client_secret is kept in clear: the service sends it to the provider (docs/SECURITY.md).
-- role_map is a JSON object of claim values to roles; allowed_email_domains a JSON array or NULL.
CREATE TABLE sso_configs (
  organization_id        TEXT PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
  issuer                 TEXT NOT NULL,
  client_id              TEXT NOT NULL,
  client_secret          TEXT NOT NULL,
  role_claim             TEXT NOT NULL,
  role_map               TEXT NOT NULL,
  allowed_email_domains  TEXT,
  created_at             INTEGER NOT NULL,
  updated_at             INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- A sign-in sent to the provider, kept by the SHA-256 of its cookie's value; deleted when it
-- comes back (once) or after it expires.
CREATE TABLE sso_logins (
  id_hash          TEXT PRIMARY KEY,
  organization_id  TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  state            TEXT NOT NULL,
  nonce            TEXT NOT NULL,
  code_verifier    TEXT NOT NULL,
  return_to        TEXT NOT NULL,
  expires_at       INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX sso_logins_expiry ON sso_logins (expires_at);
