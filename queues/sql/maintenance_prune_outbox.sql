-- maintenancePruneOutbox: delete up to $2 published outbox events published
-- more than $1 ms ago, oldest id first. Pending, inflight and dead events
-- are never pruned.
-- Locks: row locks on published rows only (SKIP LOCKED); RowExclusiveLock
-- on outbox_events, which conflicts with no relay statement. Index:
-- outbox_events_pkey.
WITH picked AS (
    SELECT id
    FROM outbox_events
    WHERE state = 'published'
      AND published_at < clock_timestamp() - ($1 * interval '1 millisecond')
    ORDER BY id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
DELETE FROM outbox_events AS e
USING picked
WHERE e.id = picked.id
