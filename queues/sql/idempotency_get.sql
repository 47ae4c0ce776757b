-- idempotencyGet: the stored request for (scope $1, key $2), locked so the
-- caller's decision (replay, conflict, in progress) holds until it commits.
-- Locks: FOR UPDATE on one row (primary key).
SELECT scope, idempotency_key, request_hash, state, response_code, response_body,
       locked_until, created_at, updated_at
FROM idempotency_requests
WHERE scope = $1 AND idempotency_key = $2
FOR UPDATE
