-- Each vehicle's live trip detection state (the trip machine's state as JSON), kept in the row the
-- telemetry commit already writes for the rules, so a commit writes one row per vehicle.
ALTER TABLE vehicle_rule_state ADD COLUMN trip TEXT;
