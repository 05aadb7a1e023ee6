-- Maintenance: schedules (intervals by distance, engine hours and days), each vehicle's item of a
-- schedule that applies to it (the baseline its intervals run from, and the highest state its
-- due cycle has announced), and the service records that restart them.
CREATE TABLE maintenance_schedules (
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              text COLLATE "C" NOT NULL,
  name            text NOT NULL,
  vehicle_ids     text[],          -- NULL with group_id NULL: every vehicle
  group_id        text COLLATE "C",
  every           json NOT NULL,   -- {km?, engineHours?, days?}
  due_soon        json NOT NULL,
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL,
  PRIMARY KEY (organization_id, id)
);
CREATE INDEX maintenance_schedules_listing ON maintenance_schedules (organization_id, created_at, id);

CREATE TABLE service_records (
  organization_id text COLLATE "C" NOT NULL,
  id              text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  schedule_id     text COLLATE "C",
  performed_at    bigint NOT NULL,
  odometer_km     double precision NOT NULL,
  engine_hours    double precision NOT NULL,
  notes           text,
  cost_amount     double precision,
  cost_currency   text,
  created_at      bigint NOT NULL,
  PRIMARY KEY (organization_id, id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX service_records_vehicle ON service_records (organization_id, vehicle_id, performed_at, id);

CREATE TABLE maintenance_items (
  organization_id text COLLATE "C" NOT NULL,
  schedule_id     text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  base_km         double precision NOT NULL,
  base_hours      double precision NOT NULL,
  base_at         bigint NOT NULL,
  cycle           integer NOT NULL,
  notified        text NOT NULL,   -- ok | due_soon | overdue: the highest state this cycle announced
  last_service_id text COLLATE "C",
  PRIMARY KEY (organization_id, schedule_id, vehicle_id),
  FOREIGN KEY (organization_id, schedule_id) REFERENCES maintenance_schedules (organization_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX maintenance_items_vehicle ON maintenance_items (organization_id, vehicle_id, schedule_id);
