-- OutboxHealth: the outbox relay's backlog (runbook step 8, RB-H): pending
-- events due now, pending events scheduled for a retry, in-flight events
-- and expired relay leases, dead events and the last death, whether the
-- relay is paused, the planner's estimate of every row (published history
-- is not counted: no index holds it and a page must not scan it), and the
-- events the broker accepted that the relay has not marked published (its
-- mark failed or it died between the two steps: they will be published
-- again).
-- The backlog's age is that of the oldest undelivered event by its
-- created_at, in flight or waiting in retry backoff included: an event
-- failing for 30 minutes is 30 minutes old, whatever its next retry or
-- whether a relay holds it right now.
-- Each count walks one partial index (outbox_pending_pick_idx,
-- outbox_inflight_lease_idx, outbox_dead_idx) and stops at $1 (returned as
-- count_cap: a count equal to it means "at least"); the oldest undelivered
-- event (outbox_undelivered_created_idx) and the last dead one are single
-- index probes; the accepted-but-unmarked events are read through
-- outbox_accepted_unmarked_idx (count capped at $1, the oldest ten ids).
-- Due and expired are decided against now(), which bounds the index scans
-- (a volatile clock would only filter them).
-- NULL: oldest_pending_at, last_dead_at and oldest_accepted_at are
-- pointers (nothing undelivered, dead or accepted); the rest are coalesced.
-- Takes ACCESS SHARE on outbox_events and relay_settings.
SELECT (SELECT count(*) FROM (SELECT 1 FROM outbox_events
        WHERE state = 'pending' AND available_at <= now() LIMIT $1) AS s)::int8 AS pending,
       (SELECT count(*) FROM (SELECT 1 FROM outbox_events
        WHERE state = 'pending' AND available_at > now() LIMIT $1) AS s)::int8  AS pending_later,
       $1::int8                                                                     AS count_cap,
       o.oldest_pending_at,
       coalesce(extract(epoch FROM clock_timestamp() - o.oldest_pending_at), 0)::float8 AS oldest_pending_seconds,
       (SELECT count(*) FROM (SELECT 1 FROM outbox_events
        WHERE state = 'inflight' LIMIT $1) AS s)::int8                              AS inflight,
       (SELECT count(*) FROM (SELECT 1 FROM outbox_events
        WHERE state = 'inflight' AND lease_until < now() LIMIT $1) AS s)::int8 AS expired_leases,
       (SELECT count(*) FROM (SELECT 1 FROM outbox_events
        WHERE state = 'dead' LIMIT $1) AS s)::int8                                  AS dead,
       (SELECT max(dead_at) FROM outbox_events WHERE state = 'dead')                AS last_dead_at,
       greatest(0, (SELECT reltuples::bigint FROM pg_class
                    WHERE oid = 'outbox_events'::regclass))::int8                   AS rows_estimate,
       coalesce((SELECT paused FROM relay_settings WHERE singleton), false)         AS relay_paused,
       (SELECT count(*) FROM (SELECT 1 FROM outbox_events
        WHERE state IN ('pending', 'inflight') AND accepted_at IS NOT NULL LIMIT $1) AS s)::int8 AS accepted_unmarked,
       (SELECT min(accepted_at) FROM outbox_events
        WHERE state IN ('pending', 'inflight') AND accepted_at IS NOT NULL)         AS oldest_accepted_at,
       ARRAY(SELECT id FROM outbox_events
             WHERE state IN ('pending', 'inflight') AND accepted_at IS NOT NULL
             ORDER BY accepted_at, id LIMIT 10)                                     AS accepted_unmarked_ids
FROM (SELECT min(created_at) AS oldest_pending_at
      FROM outbox_events
      WHERE state IN ('pending', 'inflight') AND attempts >= 0) AS o
