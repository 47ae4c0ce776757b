-- DiscardedSince: the River jobs discarded since $1 (at most $2, the
-- newest first), with their kind and the last entry of errors (River
-- appends one per failed attempt), for grouping into bursts by queue, kind
-- and error class in Go. Walks river_job_state_and_finalized_at_index
-- backwards from now to $1 (state = 'discarded', finalized_at >= $1); no
-- locks. last_error is '' for a job discarded without an error (by an
-- operator's cancel of a job that never ran, or JobCancel on a retryable one).
SELECT id, queue, kind, finalized_at,
       coalesce(errors[cardinality(errors)]->>'error', '') AS last_error,
       coalesce(errors[cardinality(errors)]->>'trace', '') <> '' AS last_panicked
FROM river_job
WHERE state = 'discarded'
  AND finalized_at >= $1
ORDER BY finalized_at DESC
LIMIT $2
