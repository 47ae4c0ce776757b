-- JobClaimFair: leases up to $2 due ready jobs of queue $1 to owner $3 for
-- $4 milliseconds like JobClaim, shared fairly between the queue's tenants
-- and within each tenant's limits (tenant_limits). Layered:
--
--  1. tenants: a skip scan of jobs_ready_tenant_idx lists up to $6 tenants
--     with ready jobs, starting after the tenant cursor $5 ('' = the first)
--     and wrapping around to the start, so successive claims go round the
--     tenants when there are more than one claim serves.
--  2. allowance: what each may take now: the claim size, less what its
--     max_in_flight leaves (running jobs counted through
--     jobs_running_tenant_idx, only for tenants that have one), less its rate
--     tokens (tenant_rate_tokens, refilled from the elapsed time).
--  3. shares: the claim size split evenly between the tenants that may take
--     any (the first ones in visit order get the remainder), and one share
--     for jobs without a tenant among the first $2 of the queue in claim
--     order; each tenant takes up to min(share, allowance) from its head.
--  4. fill: slots left by tenants with fewer jobs than a share go to the
--     tenants still under their allowance, in visit order.
--
-- Jobs without a tenant are only seen within the queue's first $2 in claim
-- order: in a queue shared by tenants they wait behind a tenant's burst, so
-- give every job of such a queue a tenant.
--
-- paused and max_workers cap the claim as in JobClaim. The engine runs this
-- statement after JobClaimLock in the same implicit transaction when the
-- queue has max_workers or tenant limits, which makes both exact across the
-- fleet and spends each rate bucket one claim at a time; $7 says whether it
-- did, and without the lock a queue with max_workers yields nothing, as in
-- JobClaim.
--
-- Locks: FOR UPDATE SKIP LOCKED on the picked rows, row locks on the
-- tenant_rate_tokens rows written. Index: jobs_ready_tenant_idx for the skip
-- scan and the per-tenant picks, jobs_ready_pick_idx for the window of jobs
-- without a tenant, jobs_running_tenant_idx for the running counts,
-- tenant_limits' primary key, and jobs' primary key for the update.
--
-- Returns the job columns except queue, status and lease_owner, which the
-- claim sets to $1, 'running' and $3 (as JobClaim; the engine fills them in).
WITH RECURSIVE settings AS (
    SELECT coalesce(bool_or(paused), false) AS paused, min(max_workers) AS max_workers
    FROM queue_settings
    WHERE queue = $1
), cap AS (
    SELECT CASE
               WHEN s.paused THEN 0
               WHEN s.max_workers IS NULL THEN $2::integer
               WHEN NOT $7::boolean THEN 0
               ELSE least($2::integer, greatest(0, s.max_workers - (
                   SELECT count(*) FROM jobs WHERE status = 'running' AND queue = $1)::integer))
           END AS n
    FROM settings s
), after_cursor (tenant_id, depth) AS (
    SELECT (SELECT j.tenant_id FROM jobs j
            WHERE j.queue = $1 AND j.status = 'ready' AND j.tenant_id > $5::text
            ORDER BY j.tenant_id LIMIT 1), 1
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j
            WHERE j.queue = $1 AND j.status = 'ready' AND j.tenant_id > a.tenant_id
            ORDER BY j.tenant_id LIMIT 1), a.depth + 1
    FROM after_cursor a
    WHERE a.tenant_id IS NOT NULL AND a.depth < $6::integer
), from_start (tenant_id, depth) AS (
    SELECT (SELECT j.tenant_id FROM jobs j
            WHERE j.queue = $1 AND j.status = 'ready' AND j.tenant_id > '' AND j.tenant_id <= $5::text
            ORDER BY j.tenant_id LIMIT 1), 1
    WHERE $5::text <> ''
    UNION ALL
    SELECT (SELECT j.tenant_id FROM jobs j
            WHERE j.queue = $1 AND j.status = 'ready' AND j.tenant_id > f.tenant_id AND j.tenant_id <= $5::text
            ORDER BY j.tenant_id LIMIT 1), f.depth + 1
    FROM from_start f
    WHERE f.tenant_id IS NOT NULL AND f.depth < $6::integer
), visited AS (
    SELECT tenant_id, row_number() OVER () AS visit
    FROM (
        SELECT tenant_id FROM after_cursor WHERE tenant_id IS NOT NULL
        UNION ALL
        SELECT tenant_id FROM from_start WHERE tenant_id IS NOT NULL
        LIMIT $6::integer
    ) v
), limited AS (
    SELECT v.tenant_id, v.visit,
           coalesce(o.max_in_flight, d.max_in_flight) AS max_in_flight,
           coalesce(o.rate_per_second, d.rate_per_second) AS rate
    FROM visited v
    LEFT JOIN tenant_limits o ON o.queue = $1 AND o.tenant_id = v.tenant_id
    LEFT JOIN tenant_limits d ON d.queue = $1 AND d.tenant_id = ''
), bucket AS (
    SELECT l.tenant_id,
           CASE WHEN l.rate IS NULL THEN NULL
                ELSE least(greatest(l.rate, 1), coalesce(
                         t.tokens + l.rate * extract(epoch FROM clock_timestamp() - t.filled_at),
                         greatest(l.rate, 1)))
           END AS tokens
    FROM limited l
    LEFT JOIN tenant_rate_tokens t ON t.queue = $1 AND t.tenant_id = l.tenant_id
), allowance AS (
    SELECT l.tenant_id, l.visit, l.rate, b.tokens,
           least((SELECT n FROM cap),
                 CASE WHEN l.max_in_flight IS NULL THEN $2::integer
                      ELSE greatest(0, l.max_in_flight - (
                          SELECT count(*) FROM jobs r
                          WHERE r.status = 'running' AND r.queue = $1 AND r.tenant_id = l.tenant_id))::integer
                 END,
                 coalesce(floor(b.tokens)::integer, $2::integer)) AS n
    FROM limited l
    JOIN bucket b ON b.tenant_id = l.tenant_id
), window_untenanted AS (
    SELECT h.id
    FROM jobs h
    WHERE h.queue = $1 AND h.status = 'ready' AND h.available_at <= clock_timestamp()
    ORDER BY h.priority DESC, h.available_at, h.id
    LIMIT (SELECT n FROM cap)
), groups AS (
    SELECT count(*) FILTER (WHERE n > 0) + 1 AS k FROM allowance
), untenanted AS (
    SELECT j.id
    FROM jobs j
    WHERE j.id = ANY (ARRAY(SELECT id FROM window_untenanted))
      AND j.status = 'ready' AND j.tenant_id IS NULL
    ORDER BY j.priority DESC, j.available_at, j.id
    LIMIT (SELECT ceil((SELECT n FROM cap)::numeric / k) FROM groups)
    FOR UPDATE SKIP LOCKED
), shares AS (
    SELECT a.tenant_id, a.n,
           least(a.n, ((SELECT n FROM cap) - (SELECT count(*) FROM untenanted)) / (g.k - 1)
                      + CASE WHEN row_number() OVER (ORDER BY a.visit)
                                  <= ((SELECT n FROM cap) - (SELECT count(*) FROM untenanted)) % (g.k - 1)
                             THEN 1 ELSE 0 END) AS share
    FROM allowance a, groups g
    WHERE a.n > 0
), firsts AS (
    SELECT s.tenant_id, p.id
    FROM shares s
    CROSS JOIN LATERAL (
        SELECT j.id
        FROM jobs j
        WHERE j.queue = $1 AND j.status = 'ready' AND j.tenant_id = s.tenant_id
          AND j.available_at <= clock_timestamp()
        ORDER BY j.priority DESC, j.available_at, j.id
        LIMIT s.share
        FOR UPDATE SKIP LOCKED
    ) p
), fill AS (
    SELECT s.tenant_id, p.id
    FROM (SELECT s.*, (SELECT count(*) FROM firsts f WHERE f.tenant_id = s.tenant_id) AS got
          FROM shares s) s
    CROSS JOIN LATERAL (
        SELECT j.id
        FROM jobs j
        WHERE j.queue = $1 AND j.status = 'ready' AND j.tenant_id = s.tenant_id
          AND j.available_at <= clock_timestamp()
          AND NOT (j.id = ANY (ARRAY(SELECT id FROM firsts)))
        ORDER BY j.priority DESC, j.available_at, j.id
        LIMIT s.n - s.got
        FOR UPDATE SKIP LOCKED
    ) p
    WHERE s.got = s.share AND s.n > s.got
    LIMIT greatest(0, (SELECT n FROM cap) - (SELECT count(*) FROM untenanted) - (SELECT count(*) FROM firsts))
), claimed AS (
    UPDATE jobs AS j
    SET status = 'running',
        lease_owner = $3,
        lease_until = clock_timestamp() + ($4::bigint * interval '1 millisecond'),
        lease_generation = j.lease_generation + 1,
        attempts = j.attempts + 1,
        started_at = clock_timestamp()
    WHERE j.id = ANY (ARRAY(SELECT id FROM untenanted UNION ALL SELECT id FROM firsts UNION ALL SELECT id FROM fill))
    RETURNING j.id, j.kind, j.payload, j.priority, j.available_at, j.lease_until,
              j.lease_generation, j.attempts, j.max_attempts, j.last_error, j.error_class,
              j.errors, j.dedupe_key, j.tenant_id, j.created_at, j.started_at, j.finished_at
), spent AS (
    INSERT INTO tenant_rate_tokens (queue, tenant_id, tokens, filled_at)
    SELECT $1, a.tenant_id, a.tokens - (SELECT count(*) FROM claimed c WHERE c.tenant_id = a.tenant_id),
           clock_timestamp()
    FROM allowance a
    WHERE a.rate IS NOT NULL
    ON CONFLICT (queue, tenant_id) DO UPDATE SET tokens = excluded.tokens, filled_at = excluded.filled_at
)
SELECT * FROM claimed
