-- outboxRelease: give back events relay $1 claimed (ids $2, generations $3)
-- but never tried to publish, because it is stopping: pending again at once,
-- with the claim's attempt refunded.
-- Locks: row locks on the given ids (primary key), fenced by owner and
-- generation.
-- Plan: primary key probes; the arrays are read through scalar subqueries so
-- that the planner cannot size the batch (see job_ack_many.sql).
UPDATE outbox_events AS e
SET state = 'pending',
    attempts = greatest(e.attempts - 1, 0),
    available_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
FROM unnest((SELECT $2::bigint[]), (SELECT $3::bigint[])) AS m(id, generation)
WHERE e.id = m.id
  AND e.state = 'inflight'
  AND e.lease_owner = $1
  AND e.lease_generation = m.generation
RETURNING e.id
