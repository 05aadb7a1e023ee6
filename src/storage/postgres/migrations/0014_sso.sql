-- Single sign-on: each organization's OpenID provider, and the sign-ins under way. Times are
-- bigint ms since the epoch.

-- client_secret is kept in clear: the service sends it to the provider (docs/SECURITY.md).
CREATE TABLE sso_configs (
  organization_id        text COLLATE "C" PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  issuer                 text NOT NULL,
  client_id              text NOT NULL,
  client_secret          text NOT NULL,
  role_claim             text NOT NULL,
  role_map               jsonb NOT NULL,
  allowed_email_domains  text[],
  created_at             bigint NOT NULL,
  updated_at             bigint NOT NULL
);

-- A sign-in sent to the provider, kept by the SHA-256 of its cookie's value; deleted when it
-- comes back (once, on any node) or after it expires.
CREATE TABLE sso_logins (
  id_hash          text COLLATE "C" PRIMARY KEY,
  organization_id  text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  state            text NOT NULL,
  nonce            text NOT NULL,
  code_verifier    text NOT NULL,
  return_to        text NOT NULL,
  expires_at       bigint NOT NULL
);
CREATE INDEX sso_logins_expiry ON sso_logins (expires_at);
