-- scheduleAdvance: move a schedule past the runs just enqueued, in the same
-- transaction as the enqueues, so a run is enqueued exactly once even if
-- leadership changes hands. Fenced on the next_run_at the tick read ($2).
-- Locks: row lock on one schedule (already held by scheduleDue).
UPDATE schedules
SET next_run_at = $3, last_run_at = coalesce($4, last_run_at),
    last_job_id = coalesce($5, last_job_id)
WHERE name = $1 AND next_run_at = $2
