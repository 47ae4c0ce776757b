-- maintenanceRunStart: record the start of a maintenance run. Locks:
-- RowExclusiveLock on maintenance_runs.
INSERT INTO maintenance_runs (kind, job_id, params)
VALUES ($1, $2, $3)
RETURNING id
