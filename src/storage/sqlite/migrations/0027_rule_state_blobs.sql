-- The meters and the rollups' state of a vehicle's rule state row as the store now writes them:
-- a compact binary form (storage/state-blobs.ts). Their columns take any type, so rows written as
-- JSON text before stay as they are and are read as before; each is rewritten in the new form at
-- the vehicle's next record. A STRICT table's column cannot change its type in place: the table
-- is made again with its rows.
CREATE TABLE vehicle_rule_state_new (
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  ts              INTEGER NOT NULL,
  inside          TEXT NOT NULL,
  held            TEXT NOT NULL,
  trip            TEXT,
  meters          ANY,
  rollup          ANY,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT;
INSERT INTO vehicle_rule_state_new (organization_id, vehicle_id, ts, inside, held, trip, meters, rollup)
  SELECT organization_id, vehicle_id, ts, inside, held, trip, meters, rollup FROM vehicle_rule_state;
DROP TABLE vehicle_rule_state;
ALTER TABLE vehicle_rule_state_new RENAME TO vehicle_rule_state;
