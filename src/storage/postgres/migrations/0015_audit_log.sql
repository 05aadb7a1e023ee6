-- The audit log (docs/API.md "Audit log"): one row per audited request, never changed. Read newest
-- first by organization (ids begin with their time), deleted by age.
CREATE TABLE audit_log (
  id              text PRIMARY KEY,
  organization_id text,
  at              bigint NOT NULL,
  actor_type      text NOT NULL,
  actor_id        text,
  actor_name      text,
  action          text NOT NULL,
  method          text NOT NULL,
  path            text NOT NULL,
  status          integer NOT NULL,
  outcome         text NOT NULL,
  resource_type   text,
  resource_id     text,
  ip              text,
  user_agent      text,
  request_id      text
);
CREATE INDEX audit_log_organization ON audit_log (organization_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
