-- JobList: a page of River jobs, newest first, filtered by queue, kind,
-- state, arguments containing a JSON object, and created_at range,
-- keyset-paginated by id ($7: only ids below it; 0 for the first page).
-- Reads only the columns a list shows, with the last error cut to 1,000
-- characters (args and error traces can be large). No locks. Without a
-- state or arguments filter it walks river_job_pkey backwards and stops
-- after a page; with an arguments filter river_job_args_index (GIN, args
-- @> $4) finds the rows; with a state, river_job_prioritized_fetching_index
-- or river_job_state_and_finalized_at_index. Optional filters are written
-- "$n = '' OR ...", so custom plans fold them away. last_error is NULL for
-- a job that never failed; the trace is non-empty only for a panic.
SELECT id, queue, kind, state::text AS state, attempt, max_attempts, priority,
       created_at, scheduled_at, attempted_at, finalized_at,
       left(errors[cardinality(errors)]->>'error', 1000) AS last_error,
       coalesce(errors[cardinality(errors)]->>'trace', '') <> '' AS last_panicked
FROM river_job
WHERE ($1::text = '' OR queue = $1)
  AND ($2::text = '' OR kind = $2)
  AND ($3::text = '' OR state = nullif($3::text, '')::river_job_state)
  AND ($4::jsonb IS NULL OR args @> $4::jsonb)
  AND ($5::timestamptz IS NULL OR created_at >= $5)
  AND ($6::timestamptz IS NULL OR created_at < $6)
  AND ($7::bigint = 0 OR id < $7)
ORDER BY id DESC
LIMIT $8
