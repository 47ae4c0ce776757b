-- DeadLetterCount: how many dead jobs match a filter (ids, queue, error
-- class, finished_at range), for the confirmation step of a requeue. No
-- locks. A filter of queue and class alone (the whole-class requeue of a
-- storm) reads the exact per-class counters of dead_letter_counts, kept in
-- the same transaction as every death, so its cost does not grow with the
-- class; any other filter counts the rows through jobs_dead_idx (queue,
-- error_class, finished_at). CASE runs only the branch it takes.
SELECT CASE
    WHEN cardinality($1::bigint[]) = 0 AND $4::timestamptz IS NULL AND $5::timestamptz IS NULL THEN (
        SELECT coalesce(sum(dead), 0)::int8
        FROM dead_letter_counts
        WHERE ($2::text = '' OR queue = $2)
          AND ($3::text = '' OR error_class = $3))
    ELSE (
        SELECT count(*)
        FROM jobs
        WHERE status = 'dead'
          AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
          AND ($2::text = '' OR queue = $2)
          AND ($3::text = '' OR error_class = $3)
          AND ($4::timestamptz IS NULL OR finished_at >= $4)
          AND ($5::timestamptz IS NULL OR finished_at < $5))
END
