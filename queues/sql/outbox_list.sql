-- OutboxList: a keyset page of outbox events, newest first: ids below $1
-- (0 = from the newest), state $2 and topic $3 when not empty, at most $4
-- rows. Walks the primary key backwards; takes no locks. Pages with a state
-- filter on a large published history should prefer the partial indexes
-- (pending, inflight, dead) which the planner picks for those states.
SELECT id, topic, aggregate_type, aggregate_id, event_type, headers, payload, state,
       available_at, lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, created_at, accepted_at, published_at, dead_at, publish_count
FROM outbox_events
WHERE ($1::bigint = 0 OR id < $1)
  AND ($2::text = '' OR state = $2)
  AND ($3::text = '' OR topic = $3)
ORDER BY id DESC
LIMIT $4
