-- JobRenew: extends the lease of one running job by $4 ms from now, fenced by
-- owner and generation; a non-owner or a stale generation matches no row.
-- Row lock on the job; primary key.
-- The status test is written `IS TRUE` (the same on a NOT NULL column) so
-- that the planner probes the primary key: told `status = 'running'` it
-- took jobs_running_lease_idx with the id as its condition, a walk of the
-- whole index, which while a snapshot holds the xmin horizon keeps an entry
-- for every lease taken since (TestHotStatementPlans checks the plan).
UPDATE jobs
SET lease_until = clock_timestamp() + ($4::bigint * interval '1 millisecond')
WHERE id = $1
  AND (status = 'running') IS TRUE
  AND lease_owner = $2
  AND lease_generation = $3
