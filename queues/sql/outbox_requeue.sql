-- outboxRequeue: move dead events back to pending with a fresh attempt
-- budget: the ids in $1 when given, otherwise dead events of topic $2 (any
-- topic when empty), at most $3 rows, oldest death first. Queues a relay
-- wake-up, delivered at commit.
-- Locks: row locks on the requeued rows. Index: outbox_dead_idx.
WITH picked AS (
    SELECT id
    FROM outbox_events
    WHERE state = 'dead'
      AND (cardinality($1::bigint[]) = 0 OR id = ANY ($1::bigint[]))
      AND ($2::text = '' OR topic = $2)
    ORDER BY dead_at, id
    LIMIT $3
    FOR UPDATE
), upd AS (
    UPDATE outbox_events AS e
    SET state = 'pending',
        attempts = 0,
        available_at = clock_timestamp(),
        dead_at = NULL
    FROM picked
    WHERE e.id = picked.id
    RETURNING e.id
)
SELECT upd.id FROM upd, (SELECT pg_notify('queues_outbox', '')) AS n
ORDER BY upd.id
