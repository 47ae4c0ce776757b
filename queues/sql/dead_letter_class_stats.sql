-- DeadLetterClassStats: dead jobs grouped by queue and error_class, with
-- how many died within the last $1 seconds and the last death, most recent
-- burst first, at most $3 groups: what to classify before any requeue.
-- The groups and their exact counts come from dead_letter_counts (one row
-- per class, kept by triggers on jobs); each group then costs index range
-- scans of jobs_dead_idx (queue, error_class, finished_at) over the window,
-- stopping at $2 (a recent count equal to $2 means "at least"), and one
-- probe for its last death. The cost follows the number of classes, not of
-- dead jobs. Takes ACCESS SHARE on jobs and dead_letter_counts.
SELECT c.queue, c.error_class, c.dead,
       (SELECT count(*) FROM (
            SELECT 1 FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class
              AND j.finished_at > now() - make_interval(secs => $1)
            UNION ALL
            SELECT 1 FROM jobs AS j
            WHERE c.error_class = ''
              AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL
              AND j.finished_at > now() - make_interval(secs => $1)
            LIMIT $2) AS s)::int8 AS dead_recent,
       greatest((SELECT max(j.finished_at) FROM jobs AS j
                 WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class),
                (SELECT max(j.finished_at) FROM jobs AS j
                 WHERE c.error_class = ''
                   AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL)) AS last_finished_at
FROM dead_letter_counts AS c
ORDER BY dead_recent DESC, c.dead DESC, c.queue, c.error_class
LIMIT $3
