-- DeadLetterGroups: dead jobs grouped by queue and error_class ($1 = '' for
-- every queue) with counts, first/last seen and the newest error as a sample,
-- the largest 200 groups. No locks; jobs_dead_idx for the grouping and for
-- each group's sample.
SELECT g.queue, coalesce(g.error_class, '') AS error_class, g.count, g.first_seen, g.last_seen,
       coalesce(s.last_error, '') AS sample_error, coalesce(s.id, 0) AS sample_job_id
FROM (
    SELECT queue, error_class, count(*) AS count,
           min(finished_at) AS first_seen, max(finished_at) AS last_seen
    FROM jobs
    WHERE status = 'dead' AND ($1::text = '' OR queue = $1)
    GROUP BY queue, error_class
) g
LEFT JOIN LATERAL (
    SELECT id, last_error
    FROM jobs
    WHERE status = 'dead' AND queue = g.queue AND error_class IS NOT DISTINCT FROM g.error_class
    ORDER BY finished_at DESC
    LIMIT 1
) s ON true
ORDER BY g.count DESC, g.queue, g.error_class
LIMIT 200
