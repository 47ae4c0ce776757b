-- DeadLetterClassList: the error classes of the dead jobs a filter matches
-- ($1 ids, $2 queue, $3 error class, $4/$5 finished_at range: the filter of
-- DeadLetterCount), with counts, largest first, at most $6 classes, for a
-- requeue's preview. No locks; jobs_dead_idx.
SELECT coalesce(error_class, '') AS error_class, count(*) AS count
FROM jobs
WHERE status = 'dead'
  AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
  AND ($2::text = '' OR queue = $2)
  AND ($3::text = '' OR error_class = $3)
  AND ($4::timestamptz IS NULL OR finished_at >= $4)
  AND ($5::timestamptz IS NULL OR finished_at < $5)
GROUP BY 1
ORDER BY 2 DESC, 1
LIMIT $6
