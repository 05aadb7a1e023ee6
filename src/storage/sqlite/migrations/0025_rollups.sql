-- Summary report rollups (docs/API.md "Summary reports"). Each vehicle's steps, summed per hour,
-- day and month (UTC) and per driver ('' for none), kept as records are committed; a late
-- record or a changed assignment marks the vehicle stale from a time on, and a replay of its
-- history from the mark before that time puts the sums right.
CREATE TABLE rollup_hours (
  organization_id TEXT NOT NULL,
  vehicle_id TEXT NOT NULL,
  hour INTEGER NOT NULL,
  driver_id TEXT NOT NULL,
  distance_m REAL NOT NULL,
  driving_s REAL NOT NULL,
  idle_s REAL NOT NULL,
  engine_s REAL NOT NULL,
  trips INTEGER NOT NULL,
  max_speed REAL,
  PRIMARY KEY (organization_id, hour, vehicle_id, driver_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE rollup_days (
  organization_id TEXT NOT NULL,
  vehicle_id TEXT NOT NULL,
  day INTEGER NOT NULL,
  driver_id TEXT NOT NULL,
  distance_m REAL NOT NULL,
  driving_s REAL NOT NULL,
  idle_s REAL NOT NULL,
  engine_s REAL NOT NULL,
  trips INTEGER NOT NULL,
  max_speed REAL,
  PRIMARY KEY (organization_id, day, vehicle_id, driver_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE rollup_months (
  organization_id TEXT NOT NULL,
  vehicle_id TEXT NOT NULL,
  month INTEGER NOT NULL,
  driver_id TEXT NOT NULL,
  distance_m REAL NOT NULL,
  driving_s REAL NOT NULL,
  idle_s REAL NOT NULL,
  engine_s REAL NOT NULL,
  trips INTEGER NOT NULL,
  max_speed REAL,
  PRIMARY KEY (organization_id, month, vehicle_id, driver_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

-- Keyed by time first: a summary reads a range of hours, days or months of the whole
-- organization. A replay drops a vehicle's from a time on.
CREATE INDEX rollup_hours_by_vehicle ON rollup_hours (organization_id, vehicle_id, hour);
CREATE INDEX rollup_days_by_vehicle ON rollup_days (organization_id, vehicle_id, day);
CREATE INDEX rollup_months_by_vehicle ON rollup_months (organization_id, vehicle_id, month);

-- The rollup and trip machines' state before the first record of each hour a vehicle reported
-- in: all of the last two days', then the first of each day.
CREATE TABLE rollup_marks (
  organization_id TEXT NOT NULL,
  vehicle_id TEXT NOT NULL,
  hour INTEGER NOT NULL,
  state TEXT NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id, hour),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

-- Vehicles whose rollups are stale from `from_ts` on.
CREATE TABLE rollup_stale (
  organization_id TEXT NOT NULL,
  vehicle_id TEXT NOT NULL,
  from_ts INTEGER NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

ALTER TABLE vehicle_rule_state ADD COLUMN rollup TEXT;
