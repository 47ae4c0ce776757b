-- scheduleTryLock: try to become the scheduler leader by taking a session
-- advisory lock on the leader's own connection; it is released when that
-- connection ends (process death, network cut, pg_terminate_backend).
-- Locks: advisory lock $1 (session level), never waits.
SELECT pg_try_advisory_lock($1)
