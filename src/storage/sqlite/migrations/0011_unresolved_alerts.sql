-- A vehicle's unresolved alerts, which every telemetry commit that judges alert rules reads: found
-- by an index of those alone, not by walking every alert the vehicle ever had (alerts_vehicle).
CREATE INDEX alerts_vehicle_unresolved ON alerts (organization_id, vehicle_id) WHERE status <> 'resolved';
