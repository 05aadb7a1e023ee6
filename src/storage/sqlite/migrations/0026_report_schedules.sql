-- Report schedules (the summary report of each day, ISO week or month in a time zone), and the
-- reports they keep 90 days with their content. A schedule's report of a period is made once
-- (the unique index over the scheduled ones); one made by `run` is a report of its own. Reports
-- outlive their schedule; both go with their organization.
CREATE TABLE report_schedules (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              TEXT NOT NULL,
  name            TEXT NOT NULL,
  group_by        TEXT NOT NULL,   -- vehicle | driver | day
  period          TEXT NOT NULL,   -- day | week | month
  timezone        TEXT NOT NULL,
  vehicle_ids     TEXT,            -- JSON array; NULL with group_id NULL: every vehicle
  group_id        TEXT,
  format          TEXT NOT NULL,   -- json | csv
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (organization_id, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX report_schedules_listing ON report_schedules (organization_id, created_at, id);

-- A rowid table: a report's content may be large.
CREATE TABLE reports (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              TEXT NOT NULL,
  schedule_id     TEXT NOT NULL,
  period_from     TEXT NOT NULL,   -- YYYY-MM-DD in the schedule's time zone
  period_to       TEXT NOT NULL,   -- exclusive
  group_by        TEXT NOT NULL,
  format          TEXT NOT NULL,
  manual          INTEGER NOT NULL, -- 1: made by run
  created_at      INTEGER NOT NULL,
  content         TEXT NOT NULL,
  PRIMARY KEY (organization_id, id)
) STRICT;
CREATE UNIQUE INDEX reports_scheduled_once ON reports (organization_id, schedule_id, period_from, period_to) WHERE manual = 0;
CREATE INDEX reports_listing ON reports (organization_id, created_at, id);
CREATE INDEX reports_of_schedule ON reports (organization_id, schedule_id, created_at, id);
CREATE INDEX reports_age ON reports (created_at);
