-- Devices: trackers and apps that speak a protocol of their own for one vehicle. The identifier
-- is what the device presents, so it is unique per protocol across all organizations.
CREATE TABLE devices (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  protocol        text NOT NULL,
  identifier      text COLLATE "C" NOT NULL,
  created_at      bigint NOT NULL,
  last_seen_at    bigint,
  UNIQUE (protocol, identifier),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX devices_organization ON devices (organization_id, created_at, id);
-- The cascade from a vehicle's deletion looks devices up by vehicle.
CREATE INDEX devices_vehicle ON devices (organization_id, vehicle_id);
