-- outboxReclaimExpired: return up to $1 inflight events whose lease expired
-- (their relay died or stalled) to pending, or to dead when attempts are
-- spent. The old owner's generation no longer matches after the next claim,
-- so its late mark is fenced out.
-- Locks: row locks on the expired rows, SKIP LOCKED. Index:
-- outbox_inflight_lease_idx.
WITH expired AS (
    SELECT id
    FROM outbox_events
    WHERE state = 'inflight'
      AND lease_until < clock_timestamp()
    ORDER BY lease_until, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_events AS e
SET state = CASE WHEN e.attempts >= e.max_attempts THEN 'dead' ELSE 'pending' END,
    dead_at = CASE WHEN e.attempts >= e.max_attempts THEN clock_timestamp() END,
    available_at = clock_timestamp(),
    last_error = 'relay lease expired (owner ' || e.lease_owner || ')',
    lease_owner = NULL,
    lease_until = NULL
FROM expired
WHERE e.id = expired.id
RETURNING e.id, e.state
