-- JobReap: the reaper. Returns at most $1 running jobs whose lease expired
-- (their worker died or stalled) to ready, or to dead when their attempts are
-- spent, bumping lease_generation so the late worker's ack is refused, and
-- recording the expiry in the errors history (bounded to $2 entries).
-- Bounded batch: FOR UPDATE SKIP LOCKED over jobs_running_lease_idx in
-- lease order; call again while it returns a full batch.
WITH expired AS (
    SELECT id
    FROM jobs
    WHERE status = 'running' AND lease_until < clock_timestamp()
    ORDER BY lease_until, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs AS j
SET status = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'ready' END,
    available_at = clock_timestamp(),
    finished_at = CASE WHEN j.attempts >= j.max_attempts THEN clock_timestamp() END,
    last_error = 'lease expired before acknowledgement (owner ' || j.lease_owner || ')',
    error_class = 'lease_expired',
    errors = (CASE WHEN jsonb_array_length(j.errors) >= $2::integer
                   THEN j.errors - 0 ELSE j.errors END)
             || jsonb_build_array(jsonb_build_object(
                    'attempt', j.attempts, 'at', clock_timestamp(),
                    'error', 'lease expired before acknowledgement (owner ' || j.lease_owner || ')',
                    'class', 'lease_expired')),
    lease_generation = j.lease_generation + 1,
    lease_owner = NULL,
    lease_until = NULL
WHERE j.id = ANY (ARRAY(SELECT id FROM expired))
RETURNING j.id, j.queue, j.status
