-- Devices: trackers and apps that speak a protocol of their own for one vehicle. The identifier
-- is what the device presents, so it is unique per protocol across all organizations.
CREATE TABLE devices (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  protocol        TEXT NOT NULL,
  identifier      TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  last_seen_at    INTEGER,
  UNIQUE (protocol, identifier),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX devices_organization ON devices (organization_id, created_at, id);
-- The cascade from a vehicle's deletion looks devices up by vehicle.
CREATE INDEX devices_vehicle ON devices (organization_id, vehicle_id);
