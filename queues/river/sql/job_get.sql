-- JobGet: one River job whole, by id (river_job_pkey). No locks. errors is
-- River's jsonb[] as one JSON array (NULL when the job never failed, made
-- []), metadata and args as stored.
SELECT id, queue, kind, state::text AS state, attempt, max_attempts, priority,
       created_at, scheduled_at, attempted_at, finalized_at,
       errors[cardinality(errors)]->>'error' AS last_error,
       coalesce(errors[cardinality(errors)]->>'trace', '') <> '' AS last_panicked,
       args, coalesce(to_jsonb(errors), '[]'::jsonb) AS errors, metadata
FROM river_job
WHERE id = $1
