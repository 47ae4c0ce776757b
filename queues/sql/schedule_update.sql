-- ScheduleUpdate: replace a schedule's spec, target and enabled flag, with
-- the next run recomputed by the caller. Locks: row lock on one schedule
-- (primary key), which also waits for a scheduler tick holding it.
UPDATE schedules
SET spec = $2, kind = $3, queue = $4, payload = $5, enabled = $6, next_run_at = $7,
    updated_by = $8, updated_at = clock_timestamp()
WHERE name = $1
RETURNING name, spec, kind, queue, payload, enabled, next_run_at, last_run_at, last_job_id,
          created_by, created_at, updated_by, updated_at
