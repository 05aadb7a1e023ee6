-- The audit log (docs/API.md "Audit log"): one row per audited request, never changed. Read newest
-- first by organization (ids begin with their time), deleted by age.
CREATE TABLE audit_log (
  id              TEXT PRIMARY KEY,
  organization_id TEXT,
  at              INTEGER NOT NULL,
  actor_type      TEXT NOT NULL,
  actor_id        TEXT,
  actor_name      TEXT,
  action          TEXT NOT NULL,
  method          TEXT NOT NULL,
  path            TEXT NOT NULL,
  status          INTEGER NOT NULL,
  outcome         TEXT NOT NULL,
  resource_type   TEXT,
  resource_id     TEXT,
  ip              TEXT,
  user_agent      TEXT,
  request_id      TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX audit_log_organization ON audit_log (organization_id, id);
CREATE INDEX audit_log_at ON audit_log (at);
