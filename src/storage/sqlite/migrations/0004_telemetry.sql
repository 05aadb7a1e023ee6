-- Telemetry history and each vehicle's merged latest state. Times are ms since the epoch.
CREATE TABLE telemetry (
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  ts              INTEGER NOT NULL,
  data            TEXT NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id, ts),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
-- Retention deletes the oldest records first.
CREATE INDEX telemetry_ts ON telemetry (ts);

CREATE TABLE telemetry_latest (
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  ts              INTEGER NOT NULL,
  fields          TEXT NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
