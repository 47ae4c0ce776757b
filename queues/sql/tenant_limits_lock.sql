-- TenantLimitsLockTx: serialises changes to the limits of tenant $2 of queue
-- $1 ('' the queue's default) until the transaction ends, so two operators
-- changing the same row apply their changes one after the other instead of
-- each writing back what it read before the other committed. An advisory
-- lock, because the row may not exist yet and creating it just to lock it
-- would already change the claims. Locks: transaction-level advisory lock
-- on (7302, hashtext(queue || '/' || tenant)).
SELECT pg_advisory_xact_lock(7302, hashtext($1 || '/' || $2))
