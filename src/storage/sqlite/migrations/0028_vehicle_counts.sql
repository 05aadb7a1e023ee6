-- How many vehicles each organization has of each status and type, kept by triggers on every
-- write to `vehicles` (whichever code makes it): a list's total and the vehicle quota read a few
-- rows here instead of counting an organization's vehicles on each request.
CREATE TABLE vehicle_counts (
  organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  status          TEXT NOT NULL,
  type            TEXT NOT NULL,
  n               INTEGER NOT NULL,
  PRIMARY KEY (organization_id, status, type)
) STRICT, WITHOUT ROWID;

INSERT INTO vehicle_counts (organization_id, status, type, n)
  SELECT organization_id, status, type, count(*) FROM vehicles GROUP BY organization_id, status, type;

CREATE TRIGGER vehicles_counted_insert AFTER INSERT ON vehicles BEGIN
  INSERT INTO vehicle_counts (organization_id, status, type, n) VALUES (NEW.organization_id, NEW.status, NEW.type, 1)
    ON CONFLICT (organization_id, status, type) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER vehicles_counted_delete AFTER DELETE ON vehicles BEGIN
  UPDATE vehicle_counts SET n = n - 1 WHERE organization_id = OLD.organization_id AND status = OLD.status AND type = OLD.type;
END;

CREATE TRIGGER vehicles_counted_update AFTER UPDATE OF organization_id, status, type ON vehicles
  WHEN OLD.organization_id IS NOT NEW.organization_id OR OLD.status IS NOT NEW.status OR OLD.type IS NOT NEW.type BEGIN
  UPDATE vehicle_counts SET n = n - 1 WHERE organization_id = OLD.organization_id AND status = OLD.status AND type = OLD.type;
  INSERT INTO vehicle_counts (organization_id, status, type, n) VALUES (NEW.organization_id, NEW.status, NEW.type, 1)
    ON CONFLICT (organization_id, status, type) DO UPDATE SET n = n + 1;
END;
