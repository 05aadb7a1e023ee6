-- Listing and counting an organization's live keys (quota checks) without a table scan.
CREATE INDEX api_keys_organization_live ON api_keys (organization_id, revoked_at, created_at);
