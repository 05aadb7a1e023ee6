-- Vehicle groups (docs/API.md "Vehicle groups") and which vehicles are in each. A vehicle's or a
-- group's deletion takes its memberships with it.
CREATE TABLE vehicle_groups (
  organization_id text COLLATE "C" NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  id              text COLLATE "C" NOT NULL,
  name            text NOT NULL,
  description     text,
  created_at      bigint NOT NULL,
  updated_at      bigint NOT NULL,
  PRIMARY KEY (organization_id, id)
);
CREATE INDEX vehicle_groups_listing ON vehicle_groups (organization_id, created_at, id);

CREATE TABLE vehicle_group_members (
  organization_id text COLLATE "C" NOT NULL,
  group_id        text COLLATE "C" NOT NULL,
  vehicle_id      text COLLATE "C" NOT NULL,
  PRIMARY KEY (organization_id, group_id, vehicle_id),
  FOREIGN KEY (organization_id, group_id) REFERENCES vehicle_groups (organization_id, id) ON DELETE CASCADE,
  FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id) ON DELETE CASCADE
);
CREATE INDEX vehicle_group_members_vehicle ON vehicle_group_members (organization_id, vehicle_id, group_id);
