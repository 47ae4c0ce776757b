-- DeadLetterClassStats: dead jobs grouped by queue and error_class, with
-- how many died within the last $1 seconds and the last death, most recent
-- burst first, at most $3 groups: what to classify before any requeue.
-- Queues and error classes are found with a loose index scan of
-- jobs_dead_idx (queue, error_class, finished_at), and counts stop at $2 (a
-- count equal to $2 means "at least"); each count is an index range scan
-- (the unclassified group reads error_class IS NULL), so cost does not grow
-- with the dead-letter pile. Takes ACCESS SHARE on jobs.
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
    -- Every (queue, class) found, plus the unclassified group of each queue
    -- when it has rows; the NULL that ends each walk is not a class.
    SELECT queue, error_class FROM dead_c WHERE error_class IS NOT NULL
    UNION ALL
    SELECT q.queue, NULL::text
    FROM dead_q AS q
    WHERE q.queue IS NOT NULL
      AND EXISTS (SELECT 1 FROM jobs AS j
                  WHERE j.status = 'dead' AND j.queue = q.queue AND j.error_class IS NULL)
)
SELECT c.queue,
       coalesce(c.error_class, '')                                       AS error_class,
       (SELECT count(*) FROM (
            SELECT 1 FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class
            UNION ALL
            SELECT 1 FROM jobs AS j
            WHERE c.error_class IS NULL
              AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL
            LIMIT $2) AS s)::int8 AS dead,
       (SELECT count(*) FROM (
            SELECT 1 FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class
              AND j.finished_at > now() - make_interval(secs => $1)
            UNION ALL
            SELECT 1 FROM jobs AS j
            WHERE c.error_class IS NULL
              AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL
              AND j.finished_at > now() - make_interval(secs => $1)
            LIMIT $2) AS s)::int8 AS dead_recent,
       greatest((SELECT max(j.finished_at) FROM jobs AS j
                 WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class),
                (SELECT max(j.finished_at) FROM jobs AS j
                 WHERE c.error_class IS NULL
                   AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL)) AS last_finished_at
FROM classes AS c
ORDER BY dead_recent DESC, dead DESC, c.queue, 2
LIMIT $3
