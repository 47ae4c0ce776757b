-- DeadLetterSample: the newest dead jobs matching a filter, at most $6, to
-- show an operator what a requeue would touch. No locks; jobs_dead_idx.
SELECT id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at
FROM jobs
WHERE status = 'dead'
  AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
  AND ($2::text = '' OR queue = $2)
  AND ($3::text = '' OR error_class = $3)
  AND ($4::timestamptz IS NULL OR finished_at >= $4)
  AND ($5::timestamptz IS NULL OR finished_at < $5)
ORDER BY finished_at DESC, id DESC
LIMIT $6
