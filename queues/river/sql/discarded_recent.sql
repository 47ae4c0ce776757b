-- DiscardedRecent: the newest discarded River jobs ($1: queue, '' for
-- every queue; $2: at most this many), with the last entry of errors
-- (River appends one per failed attempt), for grouping by error class in
-- Go (queues.ErrorTextClass, the same class the console's engine keeps).
-- Walks river_job_state_and_finalized_at_index backwards (state =
-- 'discarded', newest finalized_at first); discarded jobs always have
-- finalized_at. No locks. last_error is '' for a job discarded without an
-- error (by an operator).
SELECT id, queue, finalized_at,
       coalesce(errors[cardinality(errors)]->>'error', '') AS last_error,
       coalesce(errors[cardinality(errors)]->>'trace', '') <> '' AS last_panicked
FROM river_job
WHERE state = 'discarded'
  AND finalized_at IS NOT NULL
  AND ($1::text = '' OR queue = $1)
ORDER BY finalized_at DESC
LIMIT $2
