-- JobGet: one job by id, every column. Reads the primary key; takes no locks.
SELECT id, queue, kind, payload, status, priority, available_at,
       lease_owner, lease_until, lease_generation, attempts, max_attempts,
       last_error, error_class, errors, dedupe_key, tenant_id,
       created_at, started_at, finished_at
FROM jobs
WHERE id = $1
