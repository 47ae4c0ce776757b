-- JobReclaimDead: returns the running jobs of dead workers $1 (ids from
-- WorkerDeadMark) to ready now, or to dead when their attempts are spent,
-- bumping lease_generation so an ack from the owner (should it not be dead
-- after all) is refused, recording the reclaim in the errors history
-- (bounded to $2 entries) and counting the jobs on the workers rows. Row
-- locks on the jobs and workers rows; jobs_running_lease_idx (running jobs
-- only) filtered by owner.
WITH picked AS (
    SELECT id, lease_owner
    FROM jobs
    WHERE status = 'running' AND lease_owner = ANY ($1::text[])
    FOR UPDATE
), reclaimed AS (
    UPDATE jobs AS j
    SET status = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'ready' END,
        available_at = clock_timestamp(),
        finished_at = CASE WHEN j.attempts >= j.max_attempts THEN clock_timestamp() END,
        last_error = 'lease reclaimed: owner ' || p.lease_owner || ' died (its database session is gone and its heartbeat stopped)',
        error_class = 'worker_died',
        errors = (CASE WHEN jsonb_array_length(j.errors) >= $2::integer
                       THEN j.errors - 0 ELSE j.errors END)
                 || jsonb_build_array(jsonb_build_object(
                        'attempt', j.attempts, 'at', clock_timestamp(),
                        'error', 'lease reclaimed: owner ' || p.lease_owner || ' died (its database session is gone and its heartbeat stopped)',
                        'class', 'worker_died')),
        lease_generation = j.lease_generation + 1,
        lease_owner = NULL,
        lease_until = NULL
    FROM picked AS p
    WHERE j.id = p.id
    RETURNING j.id, j.queue, j.status, p.lease_owner AS owner
), counted AS (
    UPDATE workers AS w
    SET reclaimed_jobs = c.n
    FROM (SELECT owner, count(*)::integer AS n FROM reclaimed GROUP BY owner) AS c
    WHERE w.id = c.owner
)
SELECT id, queue, status FROM reclaimed
