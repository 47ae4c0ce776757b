-- TenantLimitsDelete: removes the limits row of tenant $2 of queue $1: an
-- override falls back to the queue's default, a default to no limit (and a
-- queue left with no rows to plain claims). Row lock on the deleted row.
DELETE FROM tenant_limits
WHERE queue = $1 AND tenant_id = $2
