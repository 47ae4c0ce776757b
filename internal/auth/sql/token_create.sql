-- TokenCreate: store the hash of a new API token; $4 is its lifetime in
-- seconds, NULL for none.
INSERT INTO api_tokens (name, token_hash, role, expires_at)
VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 second')
RETURNING id
