-- Claims find an endpoint's pending deliveries by webhook_deliveries_endpoint_due (0014); nothing
-- reads pending deliveries across endpoints any more, so this index was only written: once when a
-- delivery is added, once when its last attempt ends.
DROP INDEX webhook_deliveries_due;
