-- A vehicle's meters (odometer, engine hours, the last identifier its driver reader gave) as
-- JSON, in the row the telemetry commit already reads and writes for the rules: keeping them
-- costs no statement of its own. NULL before the vehicle's first record or a setting by hand.
ALTER TABLE vehicle_rule_state ADD COLUMN meters TEXT;
