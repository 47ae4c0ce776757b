-- JobClaimGeneric: makes the fair claim that follows in the same
-- transaction run its cached generic plan. Planning JobClaimFair afresh for
-- its parameters (what PostgreSQL does for a prepared statement whose
-- generic plan it does not trust) costs more than running it; its plan does
-- not depend on the values (one queue, tenant by tenant through
-- jobs_ready_tenant_idx). No locks.
SET LOCAL plan_cache_mode = force_generic_plan
