-- JobCompleteTx: marks a running job done inside the caller's transaction,
-- so the caller's own writes and the completion commit together or not at
-- all. Fenced like JobAck by owner and generation, and by the lease itself:
-- a job whose lease_until has passed matches no row even before the reaper
-- took it, so the caller's writes never land after the lease. Row lock on
-- the job until the caller's transaction ends (the heartbeat's renewal and
-- the reaper wait for it); primary key. With $4 > 0 it sets
-- idle_in_transaction_session_timeout to $4 milliseconds for the rest of
-- the transaction: a worker cut off before its COMMIT leaves the row
-- locked only until the server ends the idle session, and the reaper can
-- then take the job.
-- The status test is written `IS TRUE` (the same on a NOT NULL column) so
-- that the planner probes the primary key: told `status = 'running'` it
-- took jobs_running_lease_idx with the id as its condition, a walk of the
-- whole index, which while a snapshot holds the xmin horizon keeps an entry
-- for every lease taken since (TestHotStatementPlans checks the plan).
WITH guard AS (
    SELECT set_config('idle_in_transaction_session_timeout', $4::bigint::text, true)
    WHERE $4::bigint > 0
)
UPDATE jobs
SET status = 'done',
    finished_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND (status = 'running') IS TRUE
  AND lease_owner = $2
  AND lease_generation = $3
  AND lease_until > clock_timestamp()
RETURNING (SELECT count(*) FROM guard)
