-- ScheduleList: every schedule by name (a small table). No locks.
SELECT name, spec, kind, queue, payload, enabled, next_run_at, last_run_at, last_job_id,
       created_by, created_at, updated_by, updated_at
FROM schedules
ORDER BY name
