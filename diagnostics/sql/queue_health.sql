-- QueueHealth: per queue, ready jobs (available now) and how old the oldest
-- is, jobs scheduled for later, running jobs and how many of their leases
-- have expired, dead letters in total and within the last $1 seconds, and
-- the operator's pause/throttle settings (runbook step 7, RB-F, RB-G).
--
-- Cost does not follow the table or the backlog: queues, priorities and
-- error classes are found with loose index scans of the partial indexes
-- (jobs_ready_pick_idx, jobs_dead_idx), the oldest ready job is one index
-- probe per (queue, priority), ready and scheduled counts are range scans
-- per (queue, priority) on available_at, recent dead letters range scans
-- per (queue, error_class) on finished_at, and every count stops at $2 (a
-- count equal to $2 means "at least"). Comparisons use now(), the
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
                    LIMIT $2) AS s))                                     AS ready,
           sum((SELECT count(*) FROM (
                    SELECT 1 FROM jobs AS j
                    WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority = p.priority
                      AND j.available_at > now()
                    LIMIT $2) AS s))                                     AS scheduled
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
dead_q (queue) AS (
    (SELECT queue FROM jobs WHERE status = 'dead' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue > d.queue
            ORDER BY j.queue LIMIT 1)
    FROM dead_q AS d
    WHERE d.queue IS NOT NULL
),
dead_c (queue, error_class) AS (
    SELECT d.queue,
           (SELECT j.error_class FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = d.queue AND j.error_class IS NOT NULL
            ORDER BY j.error_class LIMIT 1)
    FROM dead_q AS d
    WHERE d.queue IS NOT NULL
    UNION ALL
    SELECT c.queue,
           (SELECT j.error_class FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class > c.error_class
            ORDER BY j.error_class LIMIT 1)
    FROM dead_c AS c
    WHERE c.error_class IS NOT NULL
),
classes AS (
    SELECT queue, error_class FROM dead_c WHERE error_class IS NOT NULL
    UNION ALL
    SELECT q.queue, NULL::text
    FROM dead_q AS q
    WHERE q.queue IS NOT NULL
      AND EXISTS (SELECT 1 FROM jobs AS j
                  WHERE j.status = 'dead' AND j.queue = q.queue AND j.error_class IS NULL)
),
dead AS (
    SELECT c.queue,
           sum((SELECT count(*) FROM (
                    SELECT 1 FROM jobs AS j
                    WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class
                      AND j.finished_at > now() - make_interval(secs => $1)
                    UNION ALL
                    SELECT 1 FROM jobs AS j
                    WHERE c.error_class IS NULL
                      AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL
                      AND j.finished_at > now() - make_interval(secs => $1)
                    LIMIT $2) AS s))                                     AS dead_recent
    FROM classes AS c
    GROUP BY c.queue
),
names AS (
    SELECT queue FROM ready_q WHERE queue IS NOT NULL
    UNION SELECT queue FROM running
    UNION SELECT queue FROM dead_q WHERE queue IS NOT NULL
    UNION SELECT queue FROM queue_settings
)
SELECT n.queue,
       -- least() ignores NULLs, so coalesce first: a queue with nothing
       -- ready must count 0, not the cap.
       least(coalesce(r.ready, 0), $2)::int8                             AS ready,
       least(coalesce(r.scheduled, 0), $2)::int8                         AS scheduled,
       r.oldest_ready_at,
       coalesce(extract(epoch FROM clock_timestamp() - r.oldest_ready_at), 0)::float8 AS oldest_ready_seconds,
       coalesce(u.running, 0)::int8                                      AS running,
       coalesce(u.expired_leases, 0)::int8                               AS expired_leases,
       u.oldest_expired_lease,
       (SELECT count(*) FROM (
            SELECT 1 FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = n.queue
            LIMIT $2) AS s)::int8                                        AS dead,
       least(coalesce(d.dead_recent, 0), $2)::int8                       AS dead_recent,
       coalesce(s.paused, false)                                         AS paused,
       s.max_workers,
       s.rate_per_second,
       coalesce(s.updated_by, '')                                        AS settings_updated_by,
       s.updated_at                                                      AS settings_updated_at
FROM names AS n
LEFT JOIN ready AS r USING (queue)
LEFT JOIN running AS u USING (queue)
LEFT JOIN dead AS d USING (queue)
LEFT JOIN queue_settings AS s USING (queue)
ORDER BY n.queue
