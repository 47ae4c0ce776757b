-- JobFail: records a failed attempt of a running job, fenced by owner and
-- generation. The job goes back to ready after $4 ms of backoff, or to dead
-- when $7 (permanent) is true or its attempts are spent. The attempt is
-- appended to the errors history, which keeps at most $8 entries (oldest
-- dropped). Row lock on the job; primary key.
-- The status test is written `IS TRUE` (the same on a NOT NULL column) so
-- that the planner probes the primary key: told `status = 'running'` it
-- took jobs_running_lease_idx with the id as its condition, a walk of the
-- whole index, which while a snapshot holds the xmin horizon keeps an entry
-- for every lease taken since (TestHotStatementPlans checks the plan).
UPDATE jobs
SET status = CASE WHEN $7::boolean OR attempts >= max_attempts THEN 'dead' ELSE 'ready' END,
    available_at = CASE WHEN $7::boolean OR attempts >= max_attempts THEN available_at
                        ELSE clock_timestamp() + ($4::bigint * interval '1 millisecond') END,
    finished_at = CASE WHEN $7::boolean OR attempts >= max_attempts THEN clock_timestamp() END,
    last_error = left($5, 4000),
    error_class = left($6, 128),
    errors = (CASE WHEN jsonb_array_length(errors) >= $8::integer
                   THEN errors - 0 ELSE errors END)
             || jsonb_build_array(jsonb_build_object(
                    'attempt', attempts, 'at', clock_timestamp(),
                    'error', left($5, 1000), 'class', left($6, 128))),
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND (status = 'running') IS TRUE
  AND lease_owner = $2
  AND lease_generation = $3
RETURNING status
