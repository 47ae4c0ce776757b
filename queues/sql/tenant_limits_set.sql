-- TenantLimitsSet: writes the limits of tenant $2 of queue $1 ('' is the
-- queue's default for every tenant). JobClaimFair reads them on every fair
-- claim; engine processes switch the queue to fair, locked claims within a
-- poll interval of its first row. Row lock on the tenant_limits row.
INSERT INTO tenant_limits AS t (queue, tenant_id, max_in_flight, rate_per_second, updated_by, updated_at)
VALUES ($1, $2, $3, $4, $5, clock_timestamp())
ON CONFLICT (queue, tenant_id) DO UPDATE
SET max_in_flight = excluded.max_in_flight,
    rate_per_second = excluded.rate_per_second,
    updated_by = excluded.updated_by,
    updated_at = excluded.updated_at
RETURNING queue, tenant_id, max_in_flight, rate_per_second, updated_by, updated_at
