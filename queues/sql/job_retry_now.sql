-- JobRetryNow: an operator makes a ready job due now, or puts a dead job
-- back to ready now (attempts and the errors history are kept, so a spent job
-- gets one more attempt). Row lock on the job; primary key.
UPDATE jobs
SET status = 'ready',
    available_at = clock_timestamp(),
    finished_at = NULL
WHERE id = $1 AND status IN ('ready', 'dead')
RETURNING id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at
