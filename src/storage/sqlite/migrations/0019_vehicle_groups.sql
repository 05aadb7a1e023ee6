-- Vehicle groups (docs/API.md "Vehicle groups") and which vehicles are in each. A vehicle's or a
-- group's deletion takes its memberships with it.
CREATE TABLE vehicle_groups (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  id              TEXT NOT NULL,
  name            TEXT NOT NULL,
  description     TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (organization_id, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX vehicle_groups_listing ON vehicle_groups (organization_id, created_at, id);

CREATE TABLE vehicle_group_members (
  organization_id TEXT NOT NULL,
  group_id        TEXT NOT NULL,
  vehicle_id      TEXT NOT NULL,
  PRIMARY KEY (organization_id, group_id, vehicle_id),
  FOREIGN KEY (organization_id, group_id) REFERENCES vehicle_groups (organization_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;
CREATE INDEX vehicle_group_members_vehicle ON vehicle_group_members (organization_id, vehicle_id, group_id);
