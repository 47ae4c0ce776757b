-- DiscardedMatch: the newest discarded River jobs of queue $1 ('' for
-- every queue) and kind $2 ('' for every kind), at most $3, with their
-- attempt and the last entry of errors, for an action to filter by error
-- class in Go and to guard on (state and attempt). Walks
-- river_job_state_and_finalized_at_index backwards; no locks.
SELECT id, queue, kind, state::text AS state, attempt, max_attempts,
       coalesce(errors[cardinality(errors)]->>'error', '') AS last_error,
       coalesce(errors[cardinality(errors)]->>'trace', '') <> '' AS last_panicked
FROM river_job
WHERE state = 'discarded'
  AND finalized_at IS NOT NULL
  AND ($1::text = '' OR queue = $1)
  AND ($2::text = '' OR kind = $2)
ORDER BY finalized_at DESC
LIMIT $3
