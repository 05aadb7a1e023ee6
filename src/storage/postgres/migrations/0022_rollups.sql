-- Summary report rollups (docs/API.md "Summary reports"). Each vehicle's steps, summed per hour,
-- day and month (UTC) and per driver ('' for none), kept as records are committed; a late
-- record or a changed assignment marks the vehicle stale from a time on, and a replay of its
-- history from the mark before that time puts the sums right.
CREATE TABLE rollup_hours (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  hour            integer NOT NULL,
  driver_id       text COLLATE "C" NOT NULL,
  distance_m      double precision NOT NULL,
  driving_s       double precision NOT NULL,
  idle_s          double precision NOT NULL,
  engine_s        double precision NOT NULL,
  trips           integer NOT NULL,
  max_speed       double precision,
  PRIMARY KEY (organization_id, hour, vehicle_id, driver_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);

CREATE TABLE rollup_days (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  day             integer NOT NULL,
  driver_id       text COLLATE "C" NOT NULL,
  distance_m      double precision NOT NULL,
  driving_s       double precision NOT NULL,
  idle_s          double precision NOT NULL,
  engine_s        double precision NOT NULL,
  trips           integer NOT NULL,
  max_speed       double precision,
  PRIMARY KEY (organization_id, day, vehicle_id, driver_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);

CREATE TABLE rollup_months (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  month           integer NOT NULL,
  driver_id       text COLLATE "C" NOT NULL,
  distance_m      double precision NOT NULL,
  driving_s       double precision NOT NULL,
  idle_s          double precision NOT NULL,
  engine_s        double precision NOT NULL,
  trips           integer NOT NULL,
  max_speed       double precision,
  PRIMARY KEY (organization_id, month, vehicle_id, driver_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);

-- Keyed by time first: a summary reads a range of hours, days or months of the whole
-- organization. A replay drops a vehicle's from a time on.
CREATE INDEX rollup_hours_by_vehicle ON rollup_hours (organization_id, vehicle_id, hour);
CREATE INDEX rollup_days_by_vehicle ON rollup_days (organization_id, vehicle_id, day);
CREATE INDEX rollup_months_by_vehicle ON rollup_months (organization_id, vehicle_id, month);

-- The rollup and trip machines' state before the first record of each hour a vehicle reported
-- in: all of the last two days', then the first of each day.
CREATE TABLE rollup_marks (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  hour            integer NOT NULL,
  state           json NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id, hour),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);

-- Vehicles whose rollups are stale from `from_ts` on.
CREATE TABLE rollup_stale (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  from_ts         bigint NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);

ALTER TABLE vehicle_rule_state ADD COLUMN rollup json;

-- Every commit rewrites its vehicles' rule state rows (about 1 KB of JSON each): room on their
-- pages keeps the new versions beside the old (HOT updates, no index entries to add).
ALTER TABLE vehicle_rule_state SET (fillfactor = 50);
