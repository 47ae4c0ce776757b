-- ScheduleMarkRunTx: records a manual run (schedule.run_now) as schedule $1's
-- last run, job $2, in the transaction that enqueued it, so the schedules
-- list shows it like a scheduled run. next_run_at is left alone: the cron
-- runs go on as before. Locks: row lock on one schedule (already held by
-- ScheduleLockTx); primary key.
UPDATE schedules SET last_run_at = now(), last_job_id = $2 WHERE name = $1
