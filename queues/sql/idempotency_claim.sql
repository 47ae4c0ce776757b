-- idempotencyClaim: try to take (scope $1, key $2) for a request with hash
-- $3. Returns true when this transaction inserted the row. A concurrent
-- transaction holding the same key makes this wait on the primary key until
-- it ends (bounded by the caller's lock_timeout).
-- Locks: the primary key entry of (scope, idempotency_key).
WITH ins AS (
    INSERT INTO idempotency_requests (scope, idempotency_key, request_hash, state, locked_until)
    VALUES ($1, $2, $3, 'processing', clock_timestamp() + ($4 * interval '1 millisecond'))
    ON CONFLICT (scope, idempotency_key) DO NOTHING
    RETURNING true AS inserted
)
SELECT coalesce((SELECT inserted FROM ins), false)
