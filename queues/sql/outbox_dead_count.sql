-- OutboxDeadCount: how many dead outbox events an outbox.requeue would move
-- ($1 ids, or every dead event of topic $2, all topics when ''). No locks;
-- outbox_dead_idx.
SELECT count(*)
FROM outbox_events
WHERE state = 'dead'
  AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
  AND ($2::text = '' OR topic = $2)
