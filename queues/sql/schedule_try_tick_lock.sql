-- ScheduleTryTickLock: behind a pooler in transaction mode, where no
-- session outlives a transaction, lets one scheduler's tick run at a time:
-- run first in the tick's transaction, it is released when that
-- transaction ends. Each run is enqueued once even without it (the due
-- rows are locked FOR UPDATE SKIP LOCKED and next_run_at is advanced under
-- the same lock); it keeps the other schedulers from ticking for nothing.
-- Locks: transaction-level advisory lock $1, never waits.
SELECT pg_try_advisory_xact_lock($1)
