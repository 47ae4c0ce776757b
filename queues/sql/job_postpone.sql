-- JobPostpone: hands a running job back to ready $4 milliseconds from now
-- and takes its claim's attempt back, without recording a failure, fenced
-- by owner ($2) and generation ($3): the engine could not give the job a
-- database connection, which is not the job's failure. Row lock; primary
-- key.
-- The status test is written `IS TRUE` (the same on a NOT NULL column) so
-- that the planner probes the primary key: told `status = 'running'` it
-- took jobs_running_lease_idx with the id as its condition, a walk of the
-- whole index, which while a snapshot holds the xmin horizon keeps an entry
-- for every lease taken since (TestHotStatementPlans checks the plan).
UPDATE jobs
SET status = 'ready',
    available_at = clock_timestamp() + ($4 * interval '1 millisecond'),
    attempts = greatest(attempts - 1, 0),
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND (status = 'running') IS TRUE
  AND lease_owner = $2
  AND lease_generation = $3
