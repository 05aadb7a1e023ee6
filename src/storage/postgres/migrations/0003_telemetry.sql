-- Telemetry history and each vehicle's merged latest state. Times are bigint ms since the epoch.
--
-- History is range-partitioned by time, one partition per UTC day (telemetry_pYYYYMMDD), created
-- ahead of time by the store's maintenance (src/storage/postgres/partitions.ts); retention drops
-- whole old partitions instead of deleting their rows. The default partition takes what falls
-- outside every daily one (records older than the retention window, sent late); retention empties
-- it row by row, so it stays small (creating a partition scans it).
--
-- No foreign key to vehicles: it would cost a lookup and a row lock per inserted record. Instead
-- the commit locks each vehicle row it writes for (FOR NO KEY UPDATE), and deleting a vehicle
-- deletes its history in the same transaction, after that lock.
CREATE TABLE telemetry (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  ts              bigint NOT NULL,
  -- json, not jsonb: stored as sent, and it accepts every string JSON.stringify writes (jsonb
  -- refuses \u0000 and lone surrogates, so one odd diagnostic value would fail a whole group commit).
  data            json NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id, ts)
) PARTITION BY RANGE (ts);
-- Retention deletes the oldest rows of the boundary partition a step at a time.
CREATE INDEX telemetry_ts ON telemetry (ts);
CREATE TABLE telemetry_default PARTITION OF telemetry DEFAULT;

CREATE TABLE telemetry_latest (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  ts              bigint NOT NULL,
  fields          json NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
