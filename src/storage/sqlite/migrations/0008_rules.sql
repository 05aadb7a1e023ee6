-- Geofences, alert rules, alerts, and each vehicle's rule state (written by telemetry commits).
CREATE TABLE geofences (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  geometry        TEXT NOT NULL,
  vehicle_ids     TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX geofences_organization ON geofences (organization_id, created_at, id);

CREATE TABLE alert_rules (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name            TEXT NOT NULL,
  kind            TEXT NOT NULL,
  condition       TEXT NOT NULL,
  vehicle_ids     TEXT,
  enabled         INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX alert_rules_organization ON alert_rules (organization_id, created_at, id);

CREATE TABLE alerts (
  seq               INTEGER PRIMARY KEY AUTOINCREMENT,
  id                TEXT NOT NULL UNIQUE,
  organization_id   TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  rule_id           TEXT NOT NULL,
  rule_name         TEXT NOT NULL,
  vehicle_id        TEXT NOT NULL,
  status            TEXT NOT NULL,
  opened_at         INTEGER NOT NULL,
  acknowledged_at   INTEGER,
  acknowledged_by   TEXT,
  resolved_at       INTEGER,
  resolved_by       TEXT,
  trigger_ts        INTEGER NOT NULL,
  trigger_value     TEXT
) STRICT;
-- At most one unresolved alert per rule and vehicle, whichever node or path opens it.
CREATE UNIQUE INDEX alerts_unresolved ON alerts (rule_id, vehicle_id) WHERE status <> 'resolved';
CREATE INDEX alerts_organization ON alerts (organization_id, seq);
CREATE INDEX alerts_vehicle ON alerts (organization_id, vehicle_id, seq);

CREATE TABLE vehicle_rule_state (
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  ts              INTEGER NOT NULL,
  inside          TEXT NOT NULL,
  held            TEXT NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT;
