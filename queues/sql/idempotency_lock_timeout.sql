-- idempotencyLockTimeout: set this transaction's lock_timeout to $1 and
-- return the previous value, so waiting on a key held by a concurrent request
-- is bounded (the caller restores the previous value after the claim).
-- Locks: none.
SELECT current_setting('lock_timeout'), set_config('lock_timeout', $1, true)
