-- DeadLetterQueueCounts: per queue with dead jobs, how many are dead and
-- how many died within the last $1 seconds, each count stopping at $2 (a
-- count equal to $2 means "at least"). Queues and error classes are found
-- with a loose index scan of jobs_dead_idx (queue, error_class,
-- finished_at); the recent count is a range scan per (queue, error_class)
-- on finished_at, so cost does not grow with the dead-letter pile.
-- Takes ACCESS SHARE on jobs.
WITH RECURSIVE
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
)
SELECT q.queue,
       (SELECT count(*) FROM (
            SELECT 1 FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = q.queue
            LIMIT $2) AS s)::int8                                        AS dead,
       least(coalesce(d.dead_recent, 0), $2)::int8                       AS dead_recent
FROM dead_q AS q
LEFT JOIN dead AS d USING (queue)
WHERE q.queue IS NOT NULL
ORDER BY q.queue
