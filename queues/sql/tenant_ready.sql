-- TenantReady: per queue ($1, or every queue when NULL), the ready jobs and
-- the age of the oldest due ready job of each tenant, for the $2 tenants
-- whose oldest job has waited longest; the others are folded into one row
-- with a NULL tenant_id ("other": their total and their oldest). running is
-- each named tenant's running jobs. Jobs without a tenant are not counted
-- (the queue's own oldest ready age covers them).
--
-- No locks. Index: an index-only scan of jobs_ready_tenant_idx (it holds
-- available_at), grouped in index order; jobs_running_tenant_idx for the
-- running counts. Reads every ready job that has a tenant once.
WITH per AS (
    SELECT queue, tenant_id, count(*) AS ready,
           extract(epoch FROM clock_timestamp() - min(available_at) FILTER (WHERE available_at <= clock_timestamp())) AS oldest
    FROM jobs
    WHERE status = 'ready' AND tenant_id IS NOT NULL AND ($1::text IS NULL OR queue = $1)
    GROUP BY queue, tenant_id
), ranked AS (
    SELECT per.*, row_number() OVER (PARTITION BY queue ORDER BY oldest DESC NULLS LAST, tenant_id) AS rank
    FROM per
), folded AS (
    SELECT queue, CASE WHEN rank <= $2 THEN tenant_id END AS tenant_id,
           sum(ready)::bigint AS ready, coalesce(max(oldest), 0)::float8 AS oldest_ready_seconds,
           count(*) AS tenants
    FROM ranked
    GROUP BY 1, 2
)
SELECT f.queue, f.tenant_id, f.ready, f.oldest_ready_seconds, f.tenants,
       CASE WHEN f.tenant_id IS NULL THEN 0 ELSE (
           SELECT count(*) FROM jobs r
           WHERE r.status = 'running' AND r.queue = f.queue AND r.tenant_id = f.tenant_id) END AS running
FROM folded f
ORDER BY f.queue, f.tenant_id IS NULL, f.oldest_ready_seconds DESC, f.tenant_id
