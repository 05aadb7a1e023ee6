-- Each geofence's positions (a circle counts one), kept so that the organization's total can be
-- checked against its quota and list pages cut by size without reading any geometry; and its
-- revision, one more with each replacement, so that the rule engine reads again only the
-- geofences that changed (updated_at may repeat within a millisecond).
ALTER TABLE geofences ADD COLUMN vertices INTEGER NOT NULL DEFAULT 0;
ALTER TABLE geofences ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
UPDATE geofences SET vertices = (SELECT count(*) FROM json_tree(geofences.geometry) WHERE key = 0 AND type IN ('integer', 'real'));
