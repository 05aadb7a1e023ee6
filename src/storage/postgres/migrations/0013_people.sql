-- People: the users of each organization, their invitations and sessions, failed sign-ins and
-- second factors; and the scopes the roles brought in. Times are bigint ms since the epoch.

-- email_key (the lower-cased email) is unique across the service: one sign-in form serves every
-- organization. group_ids NULL: the whole organization. totp_last_step is the newest TOTP time
-- step used, so that no code is accepted twice, on any node.
CREATE TABLE users (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  email           text NOT NULL,
  email_key       text COLLATE "C" NOT NULL,
  name            text NOT NULL,
  role            text NOT NULL,
  group_ids       text[],
  status          text NOT NULL,
  password_hash   text,
  totp_secret     text,
  totp_enabled    boolean NOT NULL,
  totp_last_step  bigint,
  sso             boolean NOT NULL,
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL,
  last_login_at   bigint
);
CREATE UNIQUE INDEX users_email_key ON users (email_key);
CREATE INDEX users_organization ON users (organization_id, created_at, id);

-- An invitation is kept by the SHA-256 of its token, never the token.
CREATE TABLE user_invitations (
  token_hash  text COLLATE "C" PRIMARY KEY,
  user_id     text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  expires_at  bigint NOT NULL,
  created_at  bigint NOT NULL
);
CREATE INDEX user_invitations_user ON user_invitations (user_id);

-- A session is kept by the SHA-256 of its cookie's secret, never the secret.
CREATE TABLE user_sessions (
  id_hash         text COLLATE "C" PRIMARY KEY,
  user_id         text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  organization_id text COLLATE "C" NOT NULL,
  csrf_token      text NOT NULL,
  created_at      bigint NOT NULL,
  last_seen_at    bigint NOT NULL,
  expires_at      bigint NOT NULL
);
CREATE INDEX user_sessions_user ON user_sessions (user_id);

-- Failed sign-ins per email, for lockouts that hold across nodes.
CREATE TABLE login_failures (
  email_key  text COLLATE "C" NOT NULL,
  at         bigint NOT NULL
);
CREATE INDEX login_failures_email ON login_failures (email_key, at);

-- Recovery codes by their SHA-256; each is deleted when used.
CREATE TABLE user_recovery_codes (
  user_id    text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash  text COLLATE "C" NOT NULL,
  PRIMARY KEY (user_id, code_hash)
);

-- The first admin key of each organization holds every scope, the new ones included.
UPDATE api_keys SET scopes = scopes || ARRAY['users', 'audit:read', 'commands', 'dispatch', 'alerts:write']
WHERE name = 'First admin key'
  AND scopes @> ARRAY['fleet:read', 'fleet:write', 'telemetry:read', 'telemetry:write', 'streams', 'admin',
                      'events:read', 'rules', 'webhooks', 'metrics:read']
  AND NOT scopes @> ARRAY['users']
  AND created_at = (SELECT min(created_at) FROM api_keys k WHERE k.organization_id = api_keys.organization_id);
