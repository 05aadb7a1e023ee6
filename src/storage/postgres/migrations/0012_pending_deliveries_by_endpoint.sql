-- Each endpoint's pending deliveries, longest due first: a claim takes a few of every endpoint in
-- turn (webhooks/fair.ts), found by this index rather than by reading the whole backlog.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (webhook_id, next_at, seq) WHERE status = 'pending';
