-- DeadLetterClassList: the error classes of the dead jobs a filter matches
-- ($1 ids, $2 queue, $3 error class, $4/$5 finished_at range: the filter of
-- DeadLetterCount), with counts, largest first, at most $6 classes, for a
-- requeue's preview. No locks. Like DeadLetterCount, a filter of queue and
-- class alone reads the exact per-class counters (dead_letter_counts) and
-- any other filter counts the jobs (jobs_dead_idx); each branch's guard
-- depends on the parameters alone, so only one branch runs.
SELECT error_class, count
FROM (
    SELECT error_class, sum(dead)::int8 AS count
    FROM dead_letter_counts
    WHERE cardinality($1::bigint[]) = 0 AND $4::timestamptz IS NULL AND $5::timestamptz IS NULL
      AND ($2::text = '' OR queue = $2)
      AND ($3::text = '' OR error_class = $3)
    GROUP BY 1
    UNION ALL
    SELECT coalesce(error_class, ''), count(*)
    FROM jobs
    WHERE NOT (cardinality($1::bigint[]) = 0 AND $4::timestamptz IS NULL AND $5::timestamptz IS NULL)
      AND status = 'dead'
      AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
      AND ($2::text = '' OR queue = $2)
      AND ($3::text = '' OR error_class = $3)
      AND ($4::timestamptz IS NULL OR finished_at >= $4)
      AND ($5::timestamptz IS NULL OR finished_at < $5)
    GROUP BY 1
) AS classes
ORDER BY 2 DESC, 1
LIMIT $6
