-- Maintenance: schedules (intervals by distance, engine hours and days), each vehicle's item of a
-- schedule that applies to it (the baseline its intervals run from, and the highest state its
-- due cycle has announced), and the service records that restart them.
CREATE TABLE maintenance_schedules (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              TEXT NOT NULL,
  name            TEXT NOT NULL,
  vehicle_ids     TEXT,            -- JSON array; NULL with group_id NULL: every vehicle
  group_id        TEXT,
  every           TEXT NOT NULL,   -- JSON {km?, engineHours?, days?}
  due_soon        TEXT NOT NULL,   -- JSON, the same members
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (organization_id, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX maintenance_schedules_listing ON maintenance_schedules (organization_id, created_at, id);

CREATE TABLE service_records (
  organization_id TEXT NOT NULL,
  id              TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  schedule_id     TEXT,
  performed_at    INTEGER NOT NULL,
  odometer_km     REAL NOT NULL,
  engine_hours    REAL NOT NULL,
  notes           TEXT,
  cost_amount     REAL,
  cost_currency   TEXT,
  created_at      INTEGER NOT NULL,
  PRIMARY KEY (organization_id, id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX service_records_vehicle ON service_records (organization_id, vehicle_id, performed_at, id);

CREATE TABLE maintenance_items (
  organization_id TEXT NOT NULL,
  schedule_id     TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  base_km         REAL NOT NULL,
  base_hours      REAL NOT NULL,
  base_at         INTEGER NOT NULL,
  cycle           INTEGER NOT NULL,
  notified        TEXT NOT NULL,   -- ok | due_soon | overdue: the highest state this cycle announced
  last_service_id TEXT,
  PRIMARY KEY (organization_id, schedule_id, vehicle_id),
  FOREIGN KEY (organization_id, schedule_id) REFERENCES maintenance_schedules (organization_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX maintenance_items_vehicle ON maintenance_items (organization_id, vehicle_id, schedule_id);
