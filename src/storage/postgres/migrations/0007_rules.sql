-- Geofences, alert rules, alerts, and each vehicle's rule state (written by telemetry commits).
CREATE TABLE geofences (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  geometry        json NOT NULL,
  vehicle_ids     text[],
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL
);
CREATE INDEX geofences_organization ON geofences (organization_id, created_at, id);

CREATE TABLE alert_rules (
  id              text COLLATE "C" PRIMARY KEY,
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name            text NOT NULL,
  kind            text NOT NULL,
  condition       json NOT NULL,
  vehicle_ids     text[],
  enabled         boolean NOT NULL,
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL
);
CREATE INDEX alert_rules_organization ON alert_rules (organization_id, created_at, id);

CREATE TABLE alerts (
  seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id                text COLLATE "C" NOT NULL UNIQUE,
  organization_id   text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  rule_id           text COLLATE "C" NOT NULL,
  rule_name         text NOT NULL,
  vehicle_id        text COLLATE "C" NOT NULL,
  status            text NOT NULL,
  opened_at         bigint NOT NULL,
  acknowledged_at   bigint,
  acknowledged_by   text,
  resolved_at       bigint,
  resolved_by       text,
  trigger_ts        bigint NOT NULL,
  trigger_value     json
);
-- At most one unresolved alert per rule and vehicle, whichever node or path opens it.
CREATE UNIQUE INDEX alerts_unresolved ON alerts (rule_id, vehicle_id) WHERE status <> 'resolved';
CREATE INDEX alerts_organization ON alerts (organization_id, seq);
CREATE INDEX alerts_vehicle ON alerts (organization_id, vehicle_id, seq);

CREATE TABLE vehicle_rule_state (
  organization_id text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  ts              bigint NOT NULL,
  inside          text[] NOT NULL,
  held            json NOT NULL,
  PRIMARY KEY (organization_id, vehicle_id),
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX vehicle_rule_state_inside ON vehicle_rule_state USING gin (inside);
