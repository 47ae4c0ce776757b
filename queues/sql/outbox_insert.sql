-- outboxInsert: write outbox events in the caller's transaction, one row per
-- element of the parallel arrays, and wake the relays when they may be idle.
-- The wake-up is coalesced twice: pg_notify with a constant channel and empty
-- payload is deduplicated by PostgreSQL within a transaction (one
-- notification per committing transaction, none on rollback), and it is
-- skipped when due pending events already exist, because a relay is then
-- draining (or will find them on its next poll) anyway. Skipping matters:
-- every committing transaction that notified takes the global NOTIFY queue
-- lock at commit, which serialises the application's commits under load.
-- Locks: RowExclusiveLock on outbox_events (plain insert). Index:
-- outbox_pending_pick_idx for the backlog probe (one index tuple).
WITH ins AS (
    INSERT INTO outbox_events (topic, aggregate_type, aggregate_id, event_type, headers, payload, max_attempts)
    SELECT e.topic, e.aggregate_type, e.aggregate_id, e.event_type, e.headers, e.payload,
           coalesce(e.max_attempts, 16)
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::int[])
         WITH ORDINALITY AS e(topic, aggregate_type, aggregate_id, event_type, headers, payload, max_attempts, ord)
    ORDER BY e.ord
    RETURNING id
)
SELECT ins.id
FROM ins,
     (SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM outbox_events
                                   WHERE state = 'pending' AND available_at <= clock_timestamp())
                  THEN pg_notify('queues_outbox', '') END) AS wake
ORDER BY ins.id
