-- DeadLetterCount: how many dead jobs match a filter (ids, queue, error
-- class, finished_at range), for the confirmation step of a requeue. No
-- locks; jobs_dead_idx (queue, error_class, finished_at).
SELECT count(*)
FROM jobs
WHERE status = 'dead'
  AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
  AND ($2::text = '' OR queue = $2)
  AND ($3::text = '' OR error_class = $3)
  AND ($4::timestamptz IS NULL OR finished_at >= $4)
  AND ($5::timestamptz IS NULL OR finished_at < $5)
