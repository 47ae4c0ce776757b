-- LeaseExpire: an operator takes a running job's lease away now: back to
-- ready, due now, lease_generation bumped so the old worker's ack and
-- heartbeat are refused. The attempt stays counted. Row lock; primary key.
-- The status test is written `IS TRUE` (the same on a NOT NULL column) so
-- that the planner probes the primary key: told `status = 'running'` it
-- took jobs_running_lease_idx with the id as its condition, a walk of the
-- whole index, which while a snapshot holds the xmin horizon keeps an entry
-- for every lease taken since (TestHotStatementPlans checks the plan).
UPDATE jobs
SET status = 'ready',
    available_at = clock_timestamp(),
    errors = errors || jsonb_build_array(jsonb_build_object(
                 'attempt', attempts, 'at', clock_timestamp(),
                 'error', 'lease expired by operator (owner ' || lease_owner || ')',
                 'class', 'lease_expired')),
    lease_generation = lease_generation + 1,
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1 AND (status = 'running') IS TRUE
RETURNING id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at
