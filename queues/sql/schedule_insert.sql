-- ScheduleCreate: add a schedule with its first run time computed by the
-- caller from the cron spec. Fails on a duplicate name (primary key).
-- Locks: RowExclusiveLock on schedules.
INSERT INTO schedules (name, spec, kind, queue, payload, enabled, next_run_at, created_by, updated_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
RETURNING name, spec, kind, queue, payload, enabled, next_run_at, last_run_at, last_job_id,
          created_by, created_at, updated_by, updated_at
