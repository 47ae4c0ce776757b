-- outboxMarkPublished: mark events published (ids $2, generations $3) for
-- relay $1. Fenced by owner and generation: a stale relay's late mark matches
-- no row and is counted by the caller.
-- Locks: row locks on the given ids (primary key).
-- Plan: primary key probes; the arrays are read through scalar subqueries so
-- that the planner cannot size the batch (see job_ack_many.sql).
UPDATE outbox_events AS e
SET state = 'published',
    published_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
FROM unnest((SELECT $2::bigint[]), (SELECT $3::bigint[])) AS m(id, generation)
WHERE e.id = m.id
  AND e.state = 'inflight'
  AND e.lease_owner = $1
  AND e.lease_generation = m.generation
RETURNING e.id
