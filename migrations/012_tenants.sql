-- 010: tenant fairness.
--
-- jobs_ready_tenant_idx is the claim's way into one tenant's ready jobs: a
-- skip scan over (queue, tenant_id) lists the tenants with ready work, and a
-- range scan per tenant takes its jobs in claim order. Both indexes are
-- partial on tenant_id IS NOT NULL, so jobs without a tenant never enter
-- them: a queue that does not use tenants pays no index write for them.
-- jobs_running_tenant_idx counts a tenant's running jobs for its
-- max_in_flight.
CREATE INDEX jobs_ready_tenant_idx
    ON jobs (queue, tenant_id, priority DESC, available_at, id)
    WHERE status = 'ready' AND tenant_id IS NOT NULL;

CREATE INDEX jobs_running_tenant_idx
    ON jobs (queue, tenant_id)
    WHERE status = 'running' AND tenant_id IS NOT NULL;

-- tenant_limits caps one queue's tenants fleet-wide, enforced by the claim.
-- The row with tenant_id '' is the queue's default for every tenant (the
-- engine stores an empty tenant as NULL, so '' names no real tenant); a
-- tenant's own row overrides it field by field, a NULL field falling back
-- to the default. NULL in the default means no limit.
CREATE TABLE tenant_limits (
    queue           text NOT NULL CHECK (queue <> '' AND length(queue) <= 128),
    tenant_id       text NOT NULL CHECK (length(tenant_id) <= 128),
    max_in_flight   integer CHECK (max_in_flight IS NULL OR max_in_flight >= 0),
    rate_per_second double precision
                    CHECK (rate_per_second IS NULL OR rate_per_second BETWEEN 0.001 AND 1000000),
    updated_by      text,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (queue, tenant_id)
);

-- tenant_rate_tokens is the fleet's token bucket per rate-limited tenant:
-- the claim refills it from filled_at, spends what it took and writes it
-- back, under the queue's claim lock, so the rate holds across processes.
CREATE TABLE tenant_rate_tokens (
    queue     text NOT NULL,
    tenant_id text NOT NULL,
    tokens    double precision NOT NULL,
    filled_at timestamptz NOT NULL,
    PRIMARY KEY (queue, tenant_id)
);
