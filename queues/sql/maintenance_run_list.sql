-- MaintenanceRunList: the latest maintenance runs, newest first (primary
-- key backwards). No locks.
SELECT id, kind, job_id, params, state, rows_moved, batches, wal_bytes::bigint AS wal_bytes,
       paused_seconds, stop_requested, last_error, started_at, updated_at, finished_at
FROM maintenance_runs
ORDER BY id DESC
LIMIT $1
