-- DeadLetterClassStats: dead jobs grouped by queue and error_class, with
-- how many died within the last $1 seconds and the last death, most recent
-- burst first, at most $3 groups (NULL: every group): what to classify
-- before any requeue. The groups, their exact counts and their last deaths
-- come from dead_letter_counts (one row per class, kept by triggers on
-- jobs). The recent deaths of every class are one range scan of
-- jobs_dead_finished_idx over the window (its predicate repeats the
-- index's "attempts >= 0"), grouped; each count stops at $2 (a recent count
-- equal to $2 means "at least"). No class costs a probe of jobs: the cost
-- follows the number of classes and of recent deaths, not of dead jobs.
-- Takes ACCESS SHARE on jobs and dead_letter_counts.
WITH recent AS (
    SELECT j.queue, coalesce(j.error_class, '') AS error_class, count(*) AS dead_recent
    FROM jobs AS j
    WHERE j.status = 'dead' AND j.attempts >= 0
      AND j.finished_at > now() - make_interval(secs => $1)
    GROUP BY 1, 2
)
SELECT c.queue, c.error_class, c.dead,
       least(coalesce(r.dead_recent, 0), $2)::int8 AS dead_recent,
       c.last_finished_at
FROM dead_letter_counts AS c
LEFT JOIN recent AS r USING (queue, error_class)
ORDER BY least(coalesce(r.dead_recent, 0), $2) DESC, c.dead DESC, c.queue, c.error_class
LIMIT $3
