-- JobCancel: an operator cancels a ready or running job: it goes dead with
-- error_class 'cancelled'. lease_generation is bumped, so a worker still
-- running it has its ack refused and its heartbeat cancels the handler.
-- Row lock on the job; primary key.
UPDATE jobs
SET status = 'dead',
    finished_at = clock_timestamp(),
    last_error = 'cancelled by operator',
    error_class = 'cancelled',
    errors = errors || jsonb_build_array(jsonb_build_object(
                 'attempt', attempts, 'at', clock_timestamp(),
                 'error', 'cancelled by operator', 'class', 'cancelled')),
    lease_generation = lease_generation + 1,
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1 AND status IN ('ready', 'running')
RETURNING id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at
