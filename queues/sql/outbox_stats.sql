-- OutboxStats: counts of pending, inflight and dead events (each from its
-- partial index), published estimated from the planner's row count (no index
-- holds published history, and a page must not scan it), expired leases,
-- events accepted by the broker but not marked, and the oldest pending age.
-- Locks: none beyond AccessShareLock. Indexes: outbox_pending_pick_idx,
-- outbox_inflight_lease_idx, outbox_dead_idx.
SELECT
    (SELECT count(*) FROM outbox_events WHERE state = 'pending') AS pending,
    (SELECT count(*) FROM outbox_events WHERE state = 'pending' AND available_at <= clock_timestamp()) AS due,
    (SELECT count(*) FROM outbox_events WHERE state = 'inflight') AS inflight,
    (SELECT count(*) FROM outbox_events WHERE state = 'inflight' AND lease_until < clock_timestamp()) AS expired_leases,
    (SELECT count(*) FROM outbox_events WHERE state = 'dead') AS dead,
    greatest(0, (SELECT reltuples::bigint FROM pg_class WHERE oid = 'outbox_events'::regclass)) AS rows_estimate,
    (SELECT count(*) FROM outbox_events
      WHERE state IN ('pending', 'inflight') AND accepted_at IS NOT NULL) AS accepted_unmarked,
    coalesce(extract(epoch FROM clock_timestamp() -
        (SELECT min(created_at) FROM outbox_events WHERE state = 'pending')), 0)::float8 AS oldest_pending_seconds
