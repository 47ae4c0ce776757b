-- DeadLetterClassStats: dead jobs grouped by queue and error_class, with
-- how many died within the last $1 seconds and the last death, most recent
-- burst first, at most $3 groups (NULL: every group): what to classify
-- before any requeue. The groups and their exact counts come from
-- dead_letter_counts (one row per class, kept by triggers on jobs). The
-- recent deaths of every class are one range scan of jobs_dead_finished_idx
-- over the window (its predicate repeats the index's "attempts >= 0"),
-- grouped; each count stops at $2 (a recent count equal to $2 means "at
-- least"). The last death of a class with a recent one comes from the
-- window; of a class without, from one probe of jobs_dead_idx, taken only
-- for the first $4 groups (the ones a page shows; the others' is NULL), so
-- the probes do not follow the number of classes either. The cost follows
-- the number of classes and of recent deaths, not of dead jobs. Takes
-- ACCESS SHARE on jobs and dead_letter_counts.
WITH recent AS (
    SELECT j.queue, coalesce(j.error_class, '') AS error_class,
           count(*) AS dead_recent, max(j.finished_at) AS last_finished_at
    FROM jobs AS j
    WHERE j.status = 'dead' AND j.attempts >= 0
      AND j.finished_at > now() - make_interval(secs => $1)
    GROUP BY 1, 2
), ranked AS (
    SELECT c.queue, c.error_class, c.dead,
           least(coalesce(r.dead_recent, 0), $2)::int8 AS dead_recent,
           r.last_finished_at AS recent_last,
           row_number() OVER (ORDER BY least(coalesce(r.dead_recent, 0), $2) DESC, c.dead DESC, c.queue, c.error_class) AS n
    FROM dead_letter_counts AS c
    LEFT JOIN recent AS r USING (queue, error_class)
)
SELECT g.queue, g.error_class, g.dead, g.dead_recent,
       -- COALESCE and CASE run the probes only for the first $4 groups
       -- with no recent death.
       coalesce(g.recent_last,
                CASE WHEN g.n <= $4 THEN
                    greatest((SELECT max(j.finished_at) FROM jobs AS j
                              WHERE j.status = 'dead' AND j.queue = g.queue AND j.error_class = g.error_class),
                             (SELECT max(j.finished_at) FROM jobs AS j
                              WHERE g.error_class = ''
                                AND j.status = 'dead' AND j.queue = g.queue AND j.error_class IS NULL))
                END) AS last_finished_at
FROM ranked AS g
ORDER BY g.n
LIMIT $3
