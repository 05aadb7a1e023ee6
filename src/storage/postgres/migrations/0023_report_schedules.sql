-- Report schedules (the summary report of each day, ISO week or month in a time zone), and the
-- reports they keep 90 days with their content. A schedule's report of a period is made once
-- (the unique index over the scheduled ones: two nodes making it, the second inserts nothing);
-- one made by `run` is a report of its own. Reports outlive their schedule; both go with their
-- organization.
CREATE TABLE report_schedules (
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              text COLLATE "C" NOT NULL,
  name            text NOT NULL,
  group_by        text NOT NULL,   -- vehicle | driver | day
  period          text NOT NULL,   -- day | week | month
  timezone        text NOT NULL,
  vehicle_ids     text[],          -- NULL with group_id NULL: every vehicle
  group_id        text COLLATE "C",
  format          text NOT NULL,   -- json | csv
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL,
  PRIMARY KEY (organization_id, id)
);
CREATE INDEX report_schedules_listing ON report_schedules (organization_id, created_at, id);

CREATE TABLE reports (
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              text COLLATE "C" NOT NULL,
  schedule_id     text COLLATE "C" NOT NULL,
  period_from     text COLLATE "C" NOT NULL,   -- YYYY-MM-DD in the schedule's time zone
  period_to       text COLLATE "C" NOT NULL,   -- exclusive
  group_by        text NOT NULL,
  format          text NOT NULL,
  manual          boolean NOT NULL,            -- made by run
  created_at      bigint NOT NULL,
  content         text NOT NULL,
  PRIMARY KEY (organization_id, id)
);
CREATE UNIQUE INDEX reports_scheduled_once ON reports (organization_id, schedule_id, period_from, period_to) WHERE NOT manual;
CREATE INDEX reports_listing ON reports (organization_id, created_at, id);
CREATE INDEX reports_of_schedule ON reports (organization_id, schedule_id, created_at, id);
CREATE INDEX reports_age ON reports (created_at);
