-- outboxReschedule: after failed publishes, put events back to pending after
-- a per-event delay ($4, ms), or dead once attempts reach max_attempts (or the
-- relay's cap $6 when positive) or when the failure was permanent ($7).
-- Fenced by owner $1 and generations $3.
-- Locks: row locks on the given ids (primary key).
-- Plan: primary key probes; the arrays are read through scalar subqueries so
-- that the planner cannot size the batch (see job_ack_many.sql).
WITH m AS (
    SELECT u.id, u.generation, u.delay_ms, u.error, u.final
    FROM unnest((SELECT $2::bigint[]), (SELECT $3::bigint[]), (SELECT $4::bigint[]),
                (SELECT $5::text[]), (SELECT $7::boolean[])) AS u(id, generation, delay_ms, error, final)
)
UPDATE outbox_events AS e
SET state = CASE WHEN m.final OR e.attempts >= least(e.max_attempts, coalesce(nullif($6::int, 0), e.max_attempts))
                 THEN 'dead' ELSE 'pending' END,
    available_at = clock_timestamp() + (m.delay_ms * interval '1 millisecond'),
    dead_at = CASE WHEN m.final OR e.attempts >= least(e.max_attempts, coalesce(nullif($6::int, 0), e.max_attempts))
                   THEN clock_timestamp() END,
    last_error = left(m.error, 4000),
    lease_owner = NULL,
    lease_until = NULL
FROM m
WHERE e.id = m.id
  AND e.state = 'inflight'
  AND e.lease_owner = $1
  AND e.lease_generation = m.generation
RETURNING e.id, e.state
