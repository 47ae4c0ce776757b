-- TokenRevoke: revoke a live token by name; a revoked token stays listed.
-- Unique index on api_tokens(name).
UPDATE api_tokens SET revoked_at = clock_timestamp()
WHERE name = $1 AND revoked_at IS NULL
RETURNING id
