-- OutboxStuck: the oldest undelivered events (pending or in flight), oldest
-- first, at most $1: the head of the backlog an operator looks at when the
-- outbox lags, with their attempts, next try, lease and last error. Walks
-- outbox_undelivered_created_idx (attempts >= 0 matches its predicate, so
-- the planner may use it); takes no locks.
SELECT id, topic, aggregate_type, aggregate_id, event_type, headers, payload, state,
       available_at, lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, created_at, accepted_at, published_at, dead_at, publish_count
FROM outbox_events
WHERE state IN ('pending', 'inflight') AND attempts >= 0
ORDER BY created_at
LIMIT $1
