-- outboxClaim: lease up to $1 due pending events to relay $2 for $3 ms,
-- bumping lease_generation (the fencing token) and attempts. The claim commits
-- before anything is published: the relay never holds row locks while it
-- waits on the broker.
-- Locks: row locks on the picked rows, SKIP LOCKED so concurrent relays claim
-- disjoint sets. Index: outbox_pending_pick_idx (ORDER BY matches it, so
-- published history is never walked).
WITH picked AS (
    SELECT id
    FROM outbox_events
    WHERE state = 'pending'
      AND available_at <= clock_timestamp()
    ORDER BY available_at, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_events AS e
SET state = 'inflight',
    lease_owner = $2,
    lease_until = clock_timestamp() + ($3 * interval '1 millisecond'),
    lease_generation = e.lease_generation + 1,
    attempts = e.attempts + 1
FROM picked
WHERE e.id = picked.id
RETURNING e.id, e.topic, e.aggregate_type, e.aggregate_id, e.event_type, e.headers,
          e.payload, e.attempts, e.max_attempts, e.lease_generation, e.created_at
