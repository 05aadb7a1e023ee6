-- The event log, written in the transaction of the change that causes each event; webhook
-- endpoints and their deliveries; a vehicle's optional name.
CREATE TABLE events (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT NOT NULL UNIQUE,
  organization_id TEXT NOT NULL,
  type            TEXT NOT NULL,
  vehicle_id      TEXT,
  occurred_at     INTEGER NOT NULL,
  recorded_at     INTEGER NOT NULL,
  data            TEXT NOT NULL
) STRICT;
CREATE INDEX events_organization ON events (organization_id, seq);
CREATE INDEX events_vehicle ON events (organization_id, vehicle_id, seq);
CREATE INDEX events_recorded ON events (recorded_at);

-- One row: the newest position pruned (an `after` before it answers 410), and how far the webhook
-- fan-out has read the log.
CREATE TABLE event_log_state (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  pruned_seq   INTEGER NOT NULL,
  fanned_seq   INTEGER NOT NULL
) STRICT;
INSERT INTO event_log_state (id, pruned_seq, fanned_seq) VALUES (1, 0, 0);

CREATE TABLE webhooks (
  id                    TEXT PRIMARY KEY,
  organization_id       TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  url                   TEXT NOT NULL,
  event_types           TEXT NOT NULL,
  description           TEXT,
  enabled               INTEGER NOT NULL,
  disabled_reason       TEXT,
  secret                TEXT NOT NULL,
  previous_secret       TEXT,
  previous_secret_until INTEGER,
  failing_since         INTEGER,
  created_at            INTEGER NOT NULL,
  updated_at            INTEGER NOT NULL
) STRICT;
CREATE INDEX webhooks_organization ON webhooks (organization_id, created_at, id);

CREATE TABLE webhook_deliveries (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT NOT NULL UNIQUE,
  webhook_id      TEXT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  event_id        TEXT NOT NULL,
  event_type      TEXT NOT NULL,
  payload         TEXT NOT NULL,
  recorded_at     INTEGER NOT NULL,
  status          TEXT NOT NULL,
  attempt         INTEGER NOT NULL,
  next_at         INTEGER,
  lease_until     INTEGER,
  response_status INTEGER,
  duration_ms     INTEGER,
  error           TEXT,
  at              INTEGER,
  UNIQUE (webhook_id, event_id)
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_recorded ON webhook_deliveries (recorded_at);

ALTER TABLE vehicles ADD COLUMN name TEXT;

-- The first admin key of each organization holds every scope, the new ones included.
UPDATE api_keys SET scopes = scopes || ' events:read rules webhooks metrics:read'
WHERE name = 'First admin key'
  AND ' ' || scopes || ' ' LIKE '% fleet:read %' AND ' ' || scopes || ' ' LIKE '% fleet:write %'
  AND ' ' || scopes || ' ' LIKE '% telemetry:read %' AND ' ' || scopes || ' ' LIKE '% telemetry:write %'
  AND ' ' || scopes || ' ' LIKE '% streams %' AND ' ' || scopes || ' ' LIKE '% admin %'
  AND ' ' || scopes || ' ' NOT LIKE '% events:read %'
  AND created_at = (SELECT min(created_at) FROM api_keys k WHERE k.organization_id = api_keys.organization_id);
