-- holder_has_xmin: whether this session's snapshot holds the xmin horizon
-- (the bloat phase's holder checks it after BEGIN REPEATABLE READ and a
-- first statement). No locks.
SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = pg_backend_pid()
