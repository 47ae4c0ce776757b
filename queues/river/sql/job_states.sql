-- JobStates: the River jobs of ids $1, with their state, attempt and the
-- last entry of errors, for an action to preview them and to re-check at
-- execution that nothing moved them since. Reads river_job's primary key;
-- no locks (River's client takes its own when it changes them).
SELECT id, queue, kind, state::text AS state, attempt, max_attempts,
       coalesce(errors[cardinality(errors)]->>'error', '') AS last_error,
       coalesce(errors[cardinality(errors)]->>'trace', '') <> '' AS last_panicked
FROM river_job
WHERE id = ANY($1::bigint[])
ORDER BY id
