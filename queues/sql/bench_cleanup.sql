-- BenchCleanup: deletes a bench run's jobs (its own throwaway queue) after
-- BenchBurn or BenchSQLFloor. Row locks on those rows; jobs_ready_pick_idx
-- does not cover finished rows, so this scans: bench databases only.
WITH gone AS (DELETE FROM jobs WHERE queue = $1 RETURNING 1)
DELETE FROM workers WHERE queues = ARRAY[$1]::text[]
