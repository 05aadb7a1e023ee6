-- Device commands (docs/API.md "Commands"): one row per command, its lifecycle in `status`.
-- Deleting a vehicle deletes its commands. Ids are time-ordered, so a vehicle's newest first is
-- the id index read backwards.
CREATE TABLE commands (
  id              TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  type            TEXT NOT NULL,
  params          TEXT NOT NULL,
  channel         TEXT NOT NULL,
  status          TEXT NOT NULL,
  created_at      INTEGER NOT NULL,
  created_by_type TEXT NOT NULL,
  created_by_id   TEXT NOT NULL,
  expires_at      INTEGER NOT NULL,
  sent_at         INTEGER,
  completed_at    INTEGER,
  result          TEXT,
  error           TEXT,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX commands_vehicle ON commands (organization_id, vehicle_id, id);
-- What is not final yet: the queue of each vehicle, and the sweep of expiries and timeouts.
CREATE INDEX commands_unfinished ON commands (organization_id, vehicle_id, channel, id) WHERE status IN ('queued', 'sent');
CREATE INDEX commands_due ON commands (status, expires_at) WHERE status IN ('queued', 'sent');
