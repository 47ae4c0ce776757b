-- outboxRenew: extend by $4 ms from now the lease relay $1 holds on the
-- events of a long batch (ids $2, generations $3), so that it may start
-- more publishes without another relay reclaiming what it still has in
-- flight. Fenced by owner and generation like the marks: an event whose
-- lease was reclaimed matches no row, and the caller starts nothing more.
-- Locks: row locks on the given ids (primary key).
-- Plan: primary key probes; the arrays are read through scalar subqueries so
-- that the planner cannot size the batch (see job_ack_many.sql).
UPDATE outbox_events AS e
SET lease_until = clock_timestamp() + ($4 * interval '1 millisecond')
FROM unnest((SELECT $2::bigint[]), (SELECT $3::bigint[])) AS m(id, generation)
WHERE e.id = m.id
  AND e.state = 'inflight'
  AND e.lease_owner = $1
  AND e.lease_generation = m.generation
RETURNING e.id
