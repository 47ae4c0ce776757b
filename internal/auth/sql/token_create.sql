-- TokenCreate: store the hash of a new API token; $4 is its lifetime in
-- seconds, NULL for none; $5 its scope, NULL for none.
INSERT INTO api_tokens (name, token_hash, role, expires_at, scope)
VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 second', $5)
RETURNING id
