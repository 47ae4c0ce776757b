-- QueueList: every River queue (a name in river_queue or on a job that is
-- not completed) with its jobs counted by state, how long its oldest
-- available job has waited, and whether it is paused (river_queue.paused_at).
-- Completed jobs are counted for the last hour only ($1: the window's
-- start), through river_job_state_and_finalized_at_index; the other states
-- are exact, read through river_job_prioritized_fetching_index
-- (state, queue, ...), so the cost follows the unfinished and failed jobs,
-- not the completed history. No locks. oldest_available_at is NULL when no
-- job is available; its age is then 0.
WITH counts AS (
    SELECT queue,
           count(*) FILTER (WHERE state = 'available') AS available,
           count(*) FILTER (WHERE state = 'scheduled') AS scheduled,
           count(*) FILTER (WHERE state = 'retryable') AS retryable,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'running') AS running,
           count(*) FILTER (WHERE state = 'completed') AS completed_recent,
           count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
           count(*) FILTER (WHERE state = 'discarded') AS discarded,
           min(scheduled_at) FILTER (WHERE state = 'available') AS oldest_available_at
    FROM river_job
    WHERE state IN ('available', 'scheduled', 'retryable', 'pending', 'running', 'cancelled', 'discarded')
       OR (state = 'completed' AND finalized_at >= $1)
    GROUP BY queue
), names AS (
    SELECT queue FROM counts
    UNION
    SELECT name FROM river_queue
)
SELECT n.queue,
       coalesce(c.available, 0) AS available,
       coalesce(c.scheduled, 0) AS scheduled,
       coalesce(c.retryable, 0) AS retryable,
       coalesce(c.pending, 0) AS pending,
       coalesce(c.running, 0) AS running,
       coalesce(c.completed_recent, 0) AS completed_recent,
       coalesce(c.cancelled, 0) AS cancelled,
       coalesce(c.discarded, 0) AS discarded,
       c.oldest_available_at,
       coalesce(extract(epoch FROM now() - c.oldest_available_at), 0)::float8 AS oldest_available_seconds,
       q.paused_at
FROM names n
LEFT JOIN counts c ON c.queue = n.queue
LEFT JOIN river_queue q ON q.name = n.queue
ORDER BY n.queue
