-- JobRelease: hands a running job back to ready now without recording a
-- failure, fenced by owner and generation. Used at shutdown; when $4 is true
-- the job never started, so its claim's attempt is taken back. Row lock;
-- primary key.
-- The status test is written `IS TRUE` (the same on a NOT NULL column) so
-- that the planner probes the primary key: told `status = 'running'` it
-- took jobs_running_lease_idx with the id as its condition, a walk of the
-- whole index, which while a snapshot holds the xmin horizon keeps an entry
-- for every lease taken since (TestHotStatementPlans checks the plan).
UPDATE jobs
SET status = 'ready',
    available_at = clock_timestamp(),
    attempts = CASE WHEN $4::boolean THEN greatest(attempts - 1, 0) ELSE attempts END,
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND (status = 'running') IS TRUE
  AND lease_owner = $2
  AND lease_generation = $3
