-- Credentials limited to vehicle groups (docs/API.md "Scoped credentials"): an API key's or OAuth
-- client's group ids, as a user's are; NULL: the whole organization.
ALTER TABLE api_keys ADD COLUMN group_ids text[];
ALTER TABLE oauth_clients ADD COLUMN group_ids text[];
