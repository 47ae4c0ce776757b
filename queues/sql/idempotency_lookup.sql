-- IdempotencyLookup: the stored request for (scope $1, key $2), for an
-- operator resolving a commit-unknown report. Primary key; no locks.
SELECT scope, idempotency_key, request_hash, state, response_code, response_body,
       locked_until, created_at, updated_at
FROM idempotency_requests
WHERE scope = $1 AND idempotency_key = $2
