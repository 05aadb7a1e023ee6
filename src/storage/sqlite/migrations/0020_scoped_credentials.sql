-- Credentials limited to vehicle groups (docs/API.md "Scoped credentials"): an API key's or OAuth
-- client's group_ids is a JSON array of group ids, as a user's is; NULL: the whole organization.
ALTER TABLE api_keys ADD COLUMN group_ids TEXT;
ALTER TABLE oauth_clients ADD COLUMN group_ids TEXT;
