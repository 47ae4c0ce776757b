-- maintenanceArchiveJobs: move up to $2 done/dead jobs finished more than $1
-- ms ago from jobs to jobs_archive, oldest id first, in one short statement.
-- Locks: row locks on finished rows only (SKIP LOCKED: an operator touching
-- one is passed over); RowExclusiveLock on jobs and jobs_archive, which
-- conflicts with no worker statement. The hot partial indexes (ready pick,
-- running lease, dedupe) hold no finished rows, so workers never wait here.
-- Index: jobs_pkey (ids grow with time, so old finished rows come first).
WITH picked AS (
    SELECT id
    FROM jobs
    WHERE status IN ('done', 'dead')
      AND finished_at < clock_timestamp() - ($1 * interval '1 millisecond')
    ORDER BY id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), moved AS (
    DELETE FROM jobs AS j
    USING picked
    WHERE j.id = picked.id
    RETURNING j.id, j.queue, j.kind, j.payload, j.status, j.priority, j.available_at,
              j.lease_owner, j.lease_until, j.lease_generation, j.attempts, j.max_attempts,
              j.last_error, j.error_class, j.errors, j.dedupe_key, j.tenant_id,
              j.created_at, j.started_at, j.finished_at
)
INSERT INTO jobs_archive (id, queue, kind, payload, status, priority, available_at,
                          lease_owner, lease_until, lease_generation, attempts, max_attempts,
                          last_error, error_class, errors, dedupe_key, tenant_id,
                          created_at, started_at, finished_at)
SELECT * FROM moved
ON CONFLICT (id) DO NOTHING
