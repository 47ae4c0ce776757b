-- SessionCreate: store the hash of a new browser session and prune expired
-- ones of the same operator. Primary key on id_hash.
WITH pruned AS (
    DELETE FROM operator_sessions WHERE operator_id = $2 AND expires_at < clock_timestamp()
)
INSERT INTO operator_sessions (id_hash, operator_id, expires_at)
VALUES ($1, $2, clock_timestamp() + $3 * interval '1 second')
