-- OutboxEventGet: one outbox event by id, every column. Reads the primary
-- key; takes no locks.
SELECT id, topic, aggregate_type, aggregate_id, event_type, headers, payload, state,
       available_at, lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, created_at, accepted_at, published_at, dead_at, publish_count
FROM outbox_events
WHERE id = $1
