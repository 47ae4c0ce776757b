-- idempotencyComplete: store the response (code $3, body $4) of the request
-- holding (scope $1, key $2); in the same transaction as the business write,
-- so the key is completed exactly when the work commits.
-- Locks: row lock on one row (primary key).
UPDATE idempotency_requests
SET state = 'completed', response_code = $3, response_body = $4, locked_until = NULL,
    updated_at = clock_timestamp()
WHERE scope = $1 AND idempotency_key = $2 AND state = 'processing'
