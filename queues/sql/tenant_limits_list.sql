-- TenantLimitsList: the tenant limits of queue $1: its default (tenant_id
-- '') first, then the per-tenant overrides by tenant. No locks; primary key
-- of tenant_limits.
SELECT queue, tenant_id, max_in_flight, rate_per_second, updated_by, updated_at
FROM tenant_limits
WHERE queue = $1
ORDER BY tenant_id
