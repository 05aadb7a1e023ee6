-- Each node keeps its own row of a vehicle's latest state (`writer`: an id the node draws at
-- start), so that nodes committing telemetry for the same vehicles never wait on each other's
-- latest-state row: a row update holds its row lock until COMMIT, WAL flush included, and with one
-- row per vehicle two nodes' commits took turns on it.
--
-- Every row holds, for each field, the newest value its writer stored with the time it was
-- reported; a vehicle's latest state is the newest value of each field over all its rows. That
-- merge does not care which rows hold what, so rows can be folded together at any time: rows not
-- written for a while (a node that stopped, a vehicle one node no longer hears from) are folded
-- into the vehicle's row of writer '' by the store's maintenance, keeping a few rows per vehicle.
-- Rows from before this migration become writer ''.
ALTER TABLE telemetry_latest
  ADD COLUMN writer text COLLATE "C" NOT NULL DEFAULT '',
  ADD COLUMN updated_at bigint NOT NULL DEFAULT 0;
ALTER TABLE telemetry_latest DROP CONSTRAINT telemetry_latest_pkey;
ALTER TABLE telemetry_latest ADD PRIMARY KEY (organization_id, vehicle_id, writer);
