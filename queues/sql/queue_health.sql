-- QueueHealth: per queue, the jobs ready now and how old the oldest is, the
-- ready jobs scheduled for later, running jobs and how many of their leases
-- have expired (and the oldest such lease), and the operator's settings.
-- Dead letters and the done estimate are not read here: QueueHealth adds
-- them from dead_letter_class_stats.sql and queue_counts.sql, each fact's
-- one statement. Queues with only a settings row are listed too.
--
-- Cost does not follow the table or the backlog: the ready and running
-- totals are summed from queue_job_counts (a few rows per queue, kept exact
-- by statement triggers on jobs in the same transaction as each change);
-- each queue's priorities are found with a loose index scan of
-- jobs_ready_pick_idx, the oldest ready job is one index probe per (queue,
-- priority), and the jobs scheduled for later are a range scan per (queue,
-- priority) that stops at $1. ready (due now) is the total minus those
-- counts; scheduled is their sum capped at $1 (returned as count_cap), so
-- ready is exact while scheduled is below the cap and an upper bound when
-- it reached it. Expired leases are a range of jobs_running_lease_idx (bounded by the
-- fleet's concurrency).
--
-- Due and expired are decided against clock_timestamp(): now() is the
-- start of a caller's transaction, which may precede the jobs it enqueued.
-- Index scans are bounded with now() as well, which the planner can
-- estimate from statistics (a bound it cannot see, such as a clock read in
-- an InitPlan, is costed at a third of the index for every probe, and a
-- plan costed that high is JIT-compiled for longer than it runs).
-- NULL: oldest_ready_at (no job due), oldest_expired_lease (none expired),
-- max_workers, rate_per_second and settings_updated_at (no settings row)
-- are scanned into pointers; the rest are coalesced.
-- Takes ACCESS SHARE on jobs, queue_job_counts and queue_settings.
WITH RECURSIVE counts AS (
    SELECT queue, sum(ready)::int8 AS ready, sum(running)::int8 AS running
    FROM queue_job_counts
    GROUP BY queue
    HAVING sum(ready) <> 0 OR sum(running) <> 0
), prio (queue, priority) AS (
    SELECT c.queue,
           (SELECT j.priority FROM jobs AS j
            WHERE j.status = 'ready' AND j.queue = c.queue
            ORDER BY j.priority DESC LIMIT 1)
    FROM counts AS c
    WHERE c.ready > 0
    UNION ALL
    SELECT p.queue,
           (SELECT j.priority FROM jobs AS j
            WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority < p.priority
            ORDER BY j.priority DESC LIMIT 1)
    FROM prio AS p
    WHERE p.priority IS NOT NULL
), ready AS (
    SELECT p.queue,
           min(o.available_at) FILTER (WHERE o.available_at <= clock_timestamp()) AS oldest_ready_at,
           sum(l.n)::int8 AS scheduled
    FROM prio AS p
    CROSS JOIN LATERAL (
        SELECT j.available_at FROM jobs AS j
        WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority = p.priority
        ORDER BY j.available_at LIMIT 1
    ) AS o
    CROSS JOIN LATERAL (
        SELECT count(*) AS n FROM (
            SELECT 1 FROM jobs AS j
            WHERE j.status = 'ready' AND j.queue = p.queue AND j.priority = p.priority
              AND j.available_at > now() AND j.available_at > clock_timestamp()
            LIMIT $1) AS s
    ) AS l
    WHERE p.priority IS NOT NULL
    GROUP BY p.queue
), expired AS (
    SELECT queue,
           count(*)         AS expired_leases,
           min(lease_until) AS oldest_expired_lease
    FROM jobs
    WHERE status = 'running' AND lease_until < clock_timestamp()
    GROUP BY queue
), names AS (
    SELECT queue FROM counts
    UNION SELECT queue FROM queue_settings
)
SELECT n.queue,
       greatest(coalesce(c.ready, 0) - coalesce(r.scheduled, 0), 0)::int8      AS ready,
       least(coalesce(r.scheduled, 0), $1)::int8                         AS scheduled,
       $1::int8                                                          AS count_cap,
       r.oldest_ready_at,
       coalesce(extract(epoch FROM clock_timestamp() - r.oldest_ready_at), 0)::float8 AS oldest_ready_seconds,
       coalesce(c.running, 0)::int8                                      AS running,
       coalesce(x.expired_leases, 0)::int8                               AS expired_leases,
       x.oldest_expired_lease,
       coalesce(s.paused, false)                                         AS paused,
       s.max_workers,
       s.rate_per_second,
       coalesce(s.updated_by, '')                                        AS settings_updated_by,
       s.updated_at                                                      AS settings_updated_at
FROM names AS n
LEFT JOIN counts AS c USING (queue)
LEFT JOIN ready AS r USING (queue)
LEFT JOIN expired AS x USING (queue)
LEFT JOIN queue_settings AS s USING (queue)
ORDER BY n.queue
