-- maintenanceRunProgress: record a run's progress after a batch (or its end,
-- when $7 is a final state) and return whether an operator asked it to stop.
-- Locks: row lock on one maintenance_runs row (primary key).
UPDATE maintenance_runs
SET rows_moved = $2, batches = $3, wal_bytes = $4, paused_seconds = $5, last_error = $6,
    state = coalesce($7, state),
    finished_at = CASE WHEN $7 IS NOT NULL THEN clock_timestamp() END,
    updated_at = clock_timestamp()
WHERE id = $1
RETURNING stop_requested
