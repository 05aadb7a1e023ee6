-- Device commands (docs/API.md "Commands"): one row per command, its lifecycle in `status`.
-- Deleting a vehicle deletes its commands. Ids are time-ordered, so a vehicle's newest first is
-- the id index read backwards.
CREATE TABLE commands (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  type            text NOT NULL,
  params          jsonb NOT NULL,
  channel         text NOT NULL,
  status          text NOT NULL,
  created_at      bigint NOT NULL,
  created_by_type text NOT NULL,
  created_by_id   text NOT NULL,
  expires_at      bigint NOT NULL,
  sent_at         bigint,
  completed_at    bigint,
  result          text,
  error           text,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX commands_vehicle ON commands (organization_id, vehicle_id, id);
-- What is not final yet: the queue of each vehicle, and the sweep of expiries and timeouts.
CREATE INDEX commands_unfinished ON commands (organization_id, vehicle_id, channel, id) WHERE status IN ('queued', 'sent');
CREATE INDEX commands_due ON commands (status, expires_at) WHERE status IN ('queued', 'sent');
