-- Drivers and their assignments to vehicles (docs/API.md "Drivers"). An identifier (an iButton's
-- or an RFID card's value) names one driver of its organization; a device reports the value alone,
-- so values are unique per organization whatever their kind. Assignments are the record of who
-- drove what: deleting a driver ends its ongoing one and keeps them; deleting a vehicle deletes its.
CREATE TABLE drivers (
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              text COLLATE "C" NOT NULL,
  name            text NOT NULL,
  external_id     text,
  phone           text,
  notes           text,
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL,
  PRIMARY KEY (organization_id, id)
);
CREATE INDEX drivers_listing ON drivers (organization_id, created_at, id);

CREATE TABLE driver_identifiers (
  organization_id text COLLATE "C" NOT NULL,
  value           text COLLATE "C" NOT NULL,
  kind            text NOT NULL,
  driver_id       text COLLATE "C" NOT NULL,
  position        bigint NOT NULL,
  PRIMARY KEY (organization_id, value),
  FOREIGN KEY (organization_id, driver_id) REFERENCES drivers (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX driver_identifiers_driver ON driver_identifiers (organization_id, driver_id, position);

CREATE TABLE driver_assignments (
  organization_id text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  driver_id       text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  started_at      bigint NOT NULL,
  ended_at        bigint,
  source          text NOT NULL,
  PRIMARY KEY (organization_id, id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX driver_assignments_vehicle ON driver_assignments (organization_id, vehicle_id, started_at);
CREATE INDEX driver_assignments_driver ON driver_assignments (organization_id, driver_id, started_at);
CREATE INDEX driver_assignments_listing ON driver_assignments (organization_id, started_at, id);
-- At most one ongoing assignment per vehicle and per driver.
CREATE UNIQUE INDEX driver_assignments_vehicle_now ON driver_assignments (organization_id, vehicle_id) WHERE ended_at IS NULL;
CREATE UNIQUE INDEX driver_assignments_driver_now ON driver_assignments (organization_id, driver_id) WHERE ended_at IS NULL;
