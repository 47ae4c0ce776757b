-- QueueCounts: per queue, the ready, running and dead jobs (exact) and the
-- done ones (estimated), from the counters alone: queue_job_counts and
-- dead_letter_counts (kept by triggers on jobs in the same transaction as
-- each change) and the planner's statistics for done (pg_class.reltuples
-- times the queue's share in pg_stats, minus the others). It never reads
-- jobs, so its cost follows the number of queues and error classes, not
-- the backlog or the history; it has no parameter, so its one plan is
-- made once per connection. No locks.
WITH counts AS (
    SELECT queue, sum(ready)::int8 AS ready, sum(running)::int8 AS running
    FROM queue_job_counts GROUP BY queue
), dead AS (
    SELECT queue, sum(dead)::int8 AS dead FROM dead_letter_counts GROUP BY queue
), total AS (
    SELECT greatest(reltuples, 0)::float8 AS n FROM pg_class WHERE oid = 'jobs'::regclass
), share AS (
    SELECT m.queue, m.freq
    FROM pg_stats st,
         unnest(st.most_common_vals::text::text[], st.most_common_freqs) AS m(queue, freq)
    WHERE st.schemaname = current_schema() AND st.tablename = 'jobs' AND st.attname = 'queue'
)
SELECT queue,
       coalesce(c.ready, 0) AS ready,
       coalesce(c.running, 0) AS running,
       coalesce(d.dead, 0) AS dead,
       greatest(0, coalesce(round((SELECT n FROM total) * sh.freq)::bigint, 0)
           - coalesce(c.ready, 0) - coalesce(c.running, 0) - coalesce(d.dead, 0)) AS done_approx
FROM (SELECT queue FROM counts WHERE ready <> 0 OR running <> 0 UNION SELECT queue FROM dead) AS q
LEFT JOIN counts AS c USING (queue)
LEFT JOIN dead AS d USING (queue)
LEFT JOIN share AS sh USING (queue)
ORDER BY queue
