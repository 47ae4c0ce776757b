-- QueueStats: per queue counts for the overview, cheap on millions of rows:
-- ready (and its oldest due age) from jobs_ready_pick_idx, running and expired
-- leases from jobs_running_lease_idx, dead (exact) from dead_letter_counts
-- (one row per error class, kept by triggers on jobs), done
-- approximated from pg_class.reltuples times the queue's share in pg_stats
-- minus the others (never a full scan),
-- plus the queue's settings. Queues with only settings rows appear too. No
-- locks.
WITH ready AS (
    SELECT queue, count(*) AS ready,
           count(*) FILTER (WHERE available_at <= clock_timestamp()) AS due,
           min(available_at) FILTER (WHERE available_at <= clock_timestamp()) AS oldest_due
    FROM jobs WHERE status = 'ready' GROUP BY queue
), running AS (
    SELECT queue, count(*) AS running,
           count(*) FILTER (WHERE lease_until < clock_timestamp()) AS expired
    FROM jobs WHERE status = 'running' GROUP BY queue
), dead AS (
    SELECT queue, sum(dead)::int8 AS dead FROM dead_letter_counts GROUP BY queue
), queues AS (
    SELECT queue FROM ready UNION SELECT queue FROM running
    UNION SELECT queue FROM dead UNION SELECT queue FROM queue_settings
), total AS (
    SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = 'jobs'::regclass
), share AS (
    -- the planner's statistics: each common queue's share of all rows
    SELECT m.queue, m.freq
    FROM pg_stats st,
         unnest(st.most_common_vals::text::text[], st.most_common_freqs) AS m(queue, freq)
    WHERE st.schemaname = current_schema() AND st.tablename = 'jobs' AND st.attname = 'queue'
)
SELECT q.queue,
       coalesce(r.ready, 0) AS ready,
       coalesce(r.due, 0) AS due,
       coalesce(u.running, 0) AS running,
       coalesce(u.expired, 0) AS expired_leases,
       coalesce(d.dead, 0) AS dead,
       coalesce(extract(epoch FROM clock_timestamp() - r.oldest_due), 0)::float8 AS oldest_ready_seconds,
       greatest(0, coalesce(round((SELECT n FROM total) * sh.freq)::bigint, 0)
           - coalesce(r.ready, 0) - coalesce(u.running, 0) - coalesce(d.dead, 0)) AS done_approx,
       coalesce(s.paused, false) AS paused, s.max_workers, s.rate_per_second
FROM queues q
LEFT JOIN ready r USING (queue)
LEFT JOIN running u USING (queue)
LEFT JOIN dead d USING (queue)
LEFT JOIN queue_settings s USING (queue)
LEFT JOIN share sh USING (queue)
ORDER BY q.queue
