-- JobInsertMany: enqueues a batch in one statement from parallel arrays
-- (EnqueueManyTx). Rows whose dedupe key matches an unfinished job are
-- skipped (jobs_dedupe_key_idx). Sends one pg_notify per distinct queue for
-- the whole statement, never one per row. Returns the inserted rows' id,
-- queue and dedupe_key in input order.
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::smallint[],
                         $5::timestamptz[], $6::integer[], $7::text[], $8::text[])
        WITH ORDINALITY AS t(queue, kind, payload, priority, available_at, max_attempts, dedupe_key, tenant_id, ord)
), ins AS (
    INSERT INTO jobs (queue, kind, payload, priority, available_at, max_attempts, dedupe_key, tenant_id)
    SELECT queue, kind, payload, priority, coalesce(available_at, clock_timestamp()), max_attempts,
           nullif(dedupe_key, ''), nullif(tenant_id, '')
    FROM input
    ORDER BY ord
    ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running')
    DO NOTHING
    RETURNING id, queue, dedupe_key
), notified AS (
    SELECT pg_notify('console_jobs', q) FROM (SELECT DISTINCT queue AS q FROM ins) d
)
SELECT id, queue, coalesce(dedupe_key, '') AS dedupe_key, (SELECT count(*) FROM notified) AS notified
FROM ins
ORDER BY id
