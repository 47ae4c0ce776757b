-- MaintenanceStopTx: ask a running maintenance run to stop after its current
-- batch. Locks: row lock on one maintenance_runs row until the caller
-- commits.
UPDATE maintenance_runs
SET stop_requested = true, updated_at = clock_timestamp()
WHERE id = $1 AND state = 'running'
