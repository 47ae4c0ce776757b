-- JobRenewMany: the heartbeat. Extends the leases of every job a process is
-- running in one statement, each fenced by (owner, its generation); returns
-- the ids still held, so the engine cancels the handlers of the others. Row
-- locks in id order. Plan: primary key probes in id order; the status test
-- is written `IS TRUE` to keep jobs_running_lease_idx out of it, and the
-- arrays are read through scalar subqueries so that the planner cannot size
-- the batch, as in job_ack_many.sql.
WITH held AS (
    SELECT * FROM unnest((SELECT $1::bigint[]), (SELECT $2::bigint[])) AS h(id, generation)
    ORDER BY id
)
UPDATE jobs AS j
SET lease_until = clock_timestamp() + ($4::bigint * interval '1 millisecond')
FROM held
WHERE j.id = held.id
  AND (j.status = 'running') IS TRUE
  AND j.lease_owner = $3
  AND j.lease_generation = held.generation
RETURNING j.id
