-- QueueHealth: per queue, ready jobs (available now) and how old the oldest
-- is, jobs scheduled for later, running jobs and how many of their leases
-- have expired, and the operator's pause/throttle settings (runbook step 7,
-- RB-F, RB-G). Dead letters are not read here: QueueHealth adds the queues
-- package's per-queue dead-letter counts (dead_letter_class_stats.sql), so
-- one statement owns that walk.
--
-- Cost does not follow the table or the backlog: queues and priorities are
-- found with loose index scans of jobs_ready_pick_idx, the oldest ready job
-- is one index probe per (queue, priority), ready and scheduled counts are
-- range scans per (queue, priority) on available_at, and every count stops
-- at $1 (a count equal to $1 means "at least"). Comparisons use now(), the
-- transaction's start, so they can bound index scans. Running jobs are
-- counted in full through jobs_running_lease_idx: they are bounded by the
-- fleet's concurrency.
-- Takes ACCESS SHARE on jobs and queue_settings.
WITH RECURSIVE
ready_q (queue) AS (
    (SELECT queue FROM jobs WHERE status = 'ready' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM jobs AS j
            WHERE j.status = 'ready' AND j.queue > r.queue
            ORDER BY j.queue LIMIT 1)
    FROM ready_q AS r
    WHERE r.queue IS NOT NULL
),
ready_p (queue, priority) AS (
    SELECT r.queue,
           (SELECT j.priority FROM jobs AS j
            WHERE j.status = 'ready' AND j.queue = r.queue
            ORDER BY j.priority DESC LIMIT 1)
    FROM ready_q AS r
    WHERE r.queue IS NOT NULL
    UNION ALL
    SELECT p.queue,
           (SELECT j.priority FROM jobs AS j
            WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority < p.priority
            ORDER BY j.priority DESC LIMIT 1)
    FROM ready_p AS p
    WHERE p.priority IS NOT NULL
),
ready AS (
    SELECT p.queue,
           min(o.available_at) FILTER (WHERE o.available_at <= now()) AS oldest_ready_at,
           sum((SELECT count(*) FROM (
                    SELECT 1 FROM jobs AS j
                    WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority = p.priority
                      AND j.available_at <= now()
                    LIMIT $1) AS s))                                     AS ready,
           sum((SELECT count(*) FROM (
                    SELECT 1 FROM jobs AS j
                    WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority = p.priority
                      AND j.available_at > now()
                    LIMIT $1) AS s))                                     AS scheduled
    FROM ready_p AS p
    CROSS JOIN LATERAL (
        SELECT j.available_at FROM jobs AS j
        WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority = p.priority
        ORDER BY j.available_at LIMIT 1
    ) AS o
    WHERE p.priority IS NOT NULL
    GROUP BY p.queue
),
running AS (
    SELECT queue,
           count(*)                                                        AS running,
           count(*) FILTER (WHERE lease_until < now())         AS expired_leases,
           min(lease_until) FILTER (WHERE lease_until < now()) AS oldest_expired_lease
    FROM jobs
    WHERE status = 'running'
    GROUP BY queue
),
names AS (
    SELECT queue FROM ready_q WHERE queue IS NOT NULL
    UNION SELECT queue FROM running
    UNION SELECT queue FROM queue_settings
)
SELECT n.queue,
       -- least() ignores NULLs, so coalesce first: a queue with nothing
       -- ready must count 0, not the cap.
       least(coalesce(r.ready, 0), $1)::int8                             AS ready,
       least(coalesce(r.scheduled, 0), $1)::int8                         AS scheduled,
       r.oldest_ready_at,
       coalesce(extract(epoch FROM clock_timestamp() - r.oldest_ready_at), 0)::float8 AS oldest_ready_seconds,
       coalesce(u.running, 0)::int8                                      AS running,
       coalesce(u.expired_leases, 0)::int8                               AS expired_leases,
       u.oldest_expired_lease,
       coalesce(s.paused, false)                                         AS paused,
       s.max_workers,
       s.rate_per_second,
       coalesce(s.updated_by, '')                                        AS settings_updated_by,
       s.updated_at                                                      AS settings_updated_at
FROM names AS n
LEFT JOIN ready AS r USING (queue)
LEFT JOIN running AS u USING (queue)
LEFT JOIN queue_settings AS s USING (queue)
ORDER BY n.queue
