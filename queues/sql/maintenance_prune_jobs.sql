-- maintenancePruneJobs: delete up to $2 done jobs that finished more than
-- $1 ms ago, oldest id first. Dead jobs (the dead letters) and unfinished
-- jobs are never pruned; a job an operator holds is passed over.
-- Locks: row locks on done rows only (SKIP LOCKED); RowExclusiveLock on
-- jobs, which conflicts with no worker statement. The hot partial indexes
-- (ready pick, running lease, dedupe) hold no done rows. Index:
-- jobs_done_id_idx (ids grow with time, so old done rows come first).
WITH picked AS (
    SELECT id
    FROM jobs
    WHERE status = 'done'
      AND finished_at < clock_timestamp() - ($1 * interval '1 millisecond')
    ORDER BY id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
DELETE FROM jobs AS j
USING picked
WHERE j.id = picked.id
