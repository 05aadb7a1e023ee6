-- Records land here first, in arrival order, and move into `telemetry` in large sorted steps.
--
-- `telemetry` is clustered by (organization, vehicle, time): a commit of one record each from 50
-- vehicles dirtied 50 different pages there, each written whole to the WAL and again at the
-- checkpoint. Here the same commit appends to a few pages; a move of a few thousand records then
-- writes each vehicle's page once, and folds them into `telemetry_latest` (which therefore lags
-- behind by at most one move; the latest state is that table merged with these rows).
-- A record is in exactly one of the two tables; reads look at both. The unique index leads with
-- the time, so that records arriving in time order append to its last page too (a history read
-- scans the few thousand recent entries of its time range).
CREATE TABLE telemetry_recent (
  seq             INTEGER PRIMARY KEY,
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  ts              INTEGER NOT NULL,
  data            TEXT NOT NULL,
  UNIQUE (ts, organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT;
