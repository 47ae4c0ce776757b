-- JobReap: the reaper. Returns at most $1 running jobs whose lease expired
-- (their worker died or stalled) to ready, or to dead when their attempts are
-- spent, bumping lease_generation so the late worker's ack is refused, and
-- recording the expiry in the errors history (bounded to $2 entries).
-- Bounded batch: FOR UPDATE SKIP LOCKED over jobs_running_lease_idx in
-- lease order; call again while it returns a full batch.
--
-- $3 (NULL: none) is the earliest lease_until the scan looks at. While a
-- snapshot holds the xmin horizon the index keeps an entry for every lease
-- taken or renewed since, and a scan from the start visits every one whose
-- time has passed (millions after a few minutes of a busy queue); the engine
-- starts after the range its last complete scan covered (see Client.reap).
--
-- One row per job reaped (queue, status), and always at least one: with
-- nothing reaped, a row whose queue and status are NULL. Every row carries
-- began_at, the statement's start on the database's clock (the clock
-- lease_until is written and compared with): the engine's next floor is
-- taken from it, never from its own clock, which may run ahead.
WITH expired AS (
    SELECT id
    FROM jobs
    WHERE status = 'running' AND lease_until < clock_timestamp()
      AND lease_until >= coalesce($3::timestamptz, '-infinity')
    ORDER BY lease_until, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), reaped AS (
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
    RETURNING j.queue, j.status
)
SELECT reaped.queue, reaped.status, s.began_at
FROM (SELECT statement_timestamp() AS began_at) AS s
LEFT JOIN reaped ON true
