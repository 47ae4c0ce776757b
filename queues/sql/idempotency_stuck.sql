-- IdempotencyStuck: idempotency keys left in 'processing': a caller claimed
-- the key and never completed it (it died, or its commit was lost), so a
-- retry with the same key is refused until the claim's lock expires, and
-- again after that if nobody retries. Oldest first, at most 20, with the
-- total (capped at $2). Walks idempotency_processing_idx only.
SELECT scope, idempotency_key, created_at, locked_until,
       extract(epoch FROM clock_timestamp() - created_at)::float8 AS age_seconds,
       (SELECT count(*) FROM (SELECT 1 FROM idempotency_requests
         WHERE state = 'processing' AND created_at < clock_timestamp() - $1::interval LIMIT $2) AS s)::int8 AS total
FROM idempotency_requests
WHERE state = 'processing' AND created_at < clock_timestamp() - $1::interval
ORDER BY created_at
LIMIT 20
