-- The event log, written in the transaction of the change that causes each event; webhook
-- endpoints and their deliveries; a vehicle's optional name.
--
-- `tx` is the writing transaction's id. The feed reads in (tx, seq) order and only events whose
-- transaction is older than every transaction still running: a sequence number is taken before
-- its commit, so a lower one can become visible after a higher one, and reading by seq alone
-- could step over it. Every transaction not yet finished has an id at least the snapshot's xmin,
-- so whatever commits later sorts after what has been read.
CREATE TABLE events (
  seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tx              xid8 NOT NULL DEFAULT pg_current_xact_id(),
  id              text COLLATE "C" NOT NULL UNIQUE,
  organization_id text COLLATE "C" NOT NULL,
  type            text NOT NULL,
  vehicle_id      text COLLATE "C",
  occurred_at     bigint NOT NULL,
  recorded_at     bigint NOT NULL,
  data            json NOT NULL
);
CREATE INDEX events_position ON events (tx, seq);
CREATE INDEX events_organization ON events (organization_id, tx, seq);
CREATE INDEX events_vehicle ON events (organization_id, vehicle_id, tx, seq);
CREATE INDEX events_recorded ON events (recorded_at);

CREATE TABLE event_log_state (
  id          integer PRIMARY KEY CHECK (id = 1),
  pruned_tx   bigint NOT NULL,
  pruned_seq  bigint NOT NULL,
  fanned_tx   bigint NOT NULL,
  fanned_seq  bigint NOT NULL
);
INSERT INTO event_log_state (id, pruned_tx, pruned_seq, fanned_tx, fanned_seq) VALUES (1, 0, 0, 0, 0);

CREATE TABLE webhooks (
  id                    text COLLATE "C" PRIMARY KEY,
  organization_id       text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  url                   text NOT NULL,
  event_types           text[] NOT NULL,
  description           text,
  enabled               boolean NOT NULL,
  disabled_reason       text,
  secret                text NOT NULL,
  previous_secret       text,
  previous_secret_until bigint,
  failing_since         bigint,
  created_at            bigint NOT NULL,
  updated_at            bigint NOT NULL
);
CREATE INDEX webhooks_organization ON webhooks (organization_id, created_at, id);

CREATE TABLE webhook_deliveries (
  seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id              text COLLATE "C" NOT NULL UNIQUE,
  webhook_id      text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id        text COLLATE "C" NOT NULL,
  event_type      text NOT NULL,
  payload         text NOT NULL,
  recorded_at     bigint NOT NULL,
  status          text NOT NULL,
  attempt         integer NOT NULL,
  next_at         bigint,
  lease_until     bigint,
  response_status integer,
  duration_ms     integer,
  error           text,
  at              bigint,
  UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
CREATE INDEX webhook_deliveries_recorded ON webhook_deliveries (recorded_at);

ALTER TABLE vehicles ADD COLUMN name text;

-- The first admin key of each organization holds every scope, the new ones included.
UPDATE api_keys SET scopes = scopes || ARRAY['events:read', 'rules', 'webhooks', 'metrics:read']
WHERE name = 'First admin key'
  AND scopes @> ARRAY['fleet:read', 'fleet:write', 'telemetry:read', 'telemetry:write', 'streams', 'admin']
  AND NOT scopes @> ARRAY['events:read']
  AND created_at = (SELECT min(created_at) FROM api_keys k WHERE k.organization_id = api_keys.organization_id);
