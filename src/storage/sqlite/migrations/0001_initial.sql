-- Organizations, API keys, vehicles and their status history. Times are ms since the epoch.
CREATE TABLE organizations (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  platform    INTEGER NOT NULL DEFAULT 0,
  created_at  INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  lookup_id       TEXT NOT NULL UNIQUE,
  display_prefix  TEXT NOT NULL,
  hash            BLOB NOT NULL,
  scopes          TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  expires_at      INTEGER,
  revoked_at      INTEGER,
  last_used_at    INTEGER
) STRICT;
CREATE INDEX api_keys_organization ON api_keys (organization_id);

CREATE TABLE vehicles (
  organization_id   TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id                TEXT NOT NULL,
  type              TEXT NOT NULL,
  status            TEXT NOT NULL,
  configuration     TEXT NOT NULL,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  status_changed_at INTEGER NOT NULL,
  PRIMARY KEY (organization_id, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX vehicles_status ON vehicles (organization_id, status, id);

CREATE TABLE vehicle_status_history (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  from_status     TEXT,
  to_status       TEXT NOT NULL,
  reason          TEXT,
  at              INTEGER NOT NULL,
  by              TEXT NOT NULL,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX vehicle_status_history_vehicle ON vehicle_status_history (organization_id, vehicle_id, seq);
