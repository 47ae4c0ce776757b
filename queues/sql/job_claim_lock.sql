-- JobClaimLock: serialises the claims of one throttled queue (max_workers
-- set) across the fleet until the end of the claim's transaction, so that the
-- running count JobClaim reads cannot be raced. Transaction-level advisory
-- lock on (7301, hashtext(queue)); unthrottled queues never take it.
SELECT pg_advisory_xact_lock(7301, hashtext($1))
