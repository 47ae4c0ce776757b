-- JobInsert: enqueues one job (EnqueueTx). A dedupe key that matches an
-- unfinished job of the same queue inserts nothing (ON CONFLICT on the partial
-- unique index jobs_dedupe_key_idx); the existing job is returned instead
-- with inserted = false. When $9 is true, one pg_notify wakes the queue's
-- workers; the engine sends it at most once per notify interval per queue
-- and process, because a transaction that notified takes a cluster-wide
-- lock at commit that serialises every such commit. Takes a row lock on the
-- new row only.
WITH ins AS (
    INSERT INTO jobs (queue, kind, payload, priority, available_at, max_attempts, dedupe_key, tenant_id)
    VALUES ($1, $2, $3, $4, coalesce($5::timestamptz, clock_timestamp()), $6, nullif($7, ''), nullif($8, ''))
    ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running')
    DO NOTHING
    RETURNING *
), notified AS (
    SELECT pg_notify('console_jobs', queue) FROM ins WHERE $9::boolean
)
SELECT id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at,
       true AS inserted, (SELECT count(*) FROM notified) AS notified
FROM ins
UNION ALL
SELECT id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at,
       false, 0
FROM jobs
WHERE queue = $1 AND dedupe_key = nullif($7, '') AND status IN ('ready', 'running')
  AND NOT EXISTS (SELECT 1 FROM ins)
