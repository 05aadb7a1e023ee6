-- Organizations, API keys, vehicles and their status history. Times are bigint ms since the epoch,
-- as in the SQLite store. Ids sort by COLLATE "C" (byte order), as SQLite's BINARY does, so pages
-- come in the same order on both backends whatever the database's locale.
CREATE TABLE organizations (
  id          text COLLATE "C" PRIMARY KEY,
  name        text NOT NULL,
  platform    boolean NOT NULL DEFAULT false,
  created_at  bigint NOT NULL
);
CREATE INDEX organizations_created ON organizations (created_at, id);

CREATE TABLE api_keys (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  lookup_id       text COLLATE "C" NOT NULL UNIQUE,
  display_prefix  text NOT NULL,
  hash            bytea NOT NULL,
  scopes          text[] NOT NULL,
  created_at      bigint NOT NULL,
  expires_at      bigint,
  revoked_at      bigint,
  last_used_at    bigint
);
-- Listing and counting an organization's live keys (quota checks) without a table scan.
CREATE INDEX api_keys_organization_live ON api_keys (organization_id, created_at, id) WHERE revoked_at IS NULL;
CREATE INDEX api_keys_organization ON api_keys (organization_id);

CREATE TABLE vehicles (
  organization_id   text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  id                text COLLATE "C" NOT NULL,
  type              text NOT NULL,
  status            text NOT NULL,
  -- json, not jsonb: kept as written (key order), like every JSON column here; never queried inside.
  configuration     json NOT NULL,
  created_at        bigint NOT NULL,
  updated_at        bigint NOT NULL,
  status_changed_at bigint NOT NULL,
  PRIMARY KEY (organization_id, id)
);
CREATE INDEX vehicles_status ON vehicles (organization_id, status, id);

CREATE TABLE vehicle_status_history (
  seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  from_status     text,
  to_status       text NOT NULL,
  reason          text,
  at              bigint NOT NULL,
  by              text NOT NULL,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX vehicle_status_history_vehicle ON vehicle_status_history (organization_id, vehicle_id, seq);
