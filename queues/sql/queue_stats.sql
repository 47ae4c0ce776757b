-- QueueStats: per queue counts for the overview, at a cost that follows the
-- number of queues, not the backlog or the history:
-- ready and running (exact) are summed from queue_job_counts (a few rows per
-- queue, kept by statement triggers on jobs in the same transaction as each
-- change); dead (exact) from dead_letter_counts (one row per error class);
-- the ready jobs not yet due (scheduled) are counted through
-- jobs_ready_pick_idx, up to $1 per queue and priority, so due = ready -
-- scheduled is exact while scheduled is below $1 (due_exact); the oldest due
-- ready job is one probe of jobs_ready_pick_idx per (queue, priority), the
-- priorities found by a loose scan of it; expired leases are a range of
-- jobs_running_lease_idx (bounded by the fleet's concurrency). Done is not
-- read here: QueueStats takes it from queue_counts.sql, its one owner.
-- Queues with only settings rows appear too. Due and expired are decided
-- against clock_timestamp() (now() is the start of a caller's transaction,
-- which may precede the jobs it enqueued); index scans are bounded with now() as well, which the planner
-- can estimate from statistics (a bound it cannot see, such as a clock read
-- in an InitPlan, is costed at a third of the index for every probe, and a
-- plan costed that high is JIT-compiled for longer than it runs). No locks.
WITH RECURSIVE counts AS (
    SELECT queue, sum(ready)::int8 AS ready, sum(running)::int8 AS running
    FROM queue_job_counts GROUP BY queue
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
           min(o.available_at) FILTER (WHERE o.available_at <= clock_timestamp()) AS oldest_due,
           sum(l.n)::int8 AS scheduled,
           bool_and(l.n < $1) AS scheduled_exact
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
    SELECT queue, count(*) AS expired
    FROM jobs WHERE status = 'running' AND lease_until < clock_timestamp() GROUP BY queue
), dead AS (
    SELECT queue, sum(dead)::int8 AS dead FROM dead_letter_counts GROUP BY queue
), queues AS (
    SELECT queue FROM counts WHERE ready <> 0 OR running <> 0
    UNION SELECT queue FROM dead UNION SELECT queue FROM queue_settings
)
SELECT q.queue,
       coalesce(c.ready, 0) AS ready,
       greatest(coalesce(c.ready, 0) - coalesce(r.scheduled, 0), 0) AS due,
       coalesce(r.scheduled_exact, true) AS due_exact,
       coalesce(c.running, 0) AS running,
       coalesce(x.expired, 0) AS expired_leases,
       coalesce(d.dead, 0) AS dead,
       coalesce(extract(epoch FROM clock_timestamp() - r.oldest_due), 0)::float8 AS oldest_ready_seconds,
       coalesce(s.paused, false) AS paused, s.max_workers, s.rate_per_second
FROM queues q
LEFT JOIN counts c USING (queue)
LEFT JOIN ready r USING (queue)
LEFT JOIN expired x USING (queue)
LEFT JOIN dead d USING (queue)
LEFT JOIN queue_settings s USING (queue)
ORDER BY q.queue
