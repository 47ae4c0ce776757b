-- Deadlocks: the deadlocks each database has counted since its statistics
-- were reset, with the settings that decide what the server log says about
-- them (log_lock_waits, deadlock_timeout). A findings round keeps the
-- counts between rounds and reports the increase over a window: PostgreSQL
-- resolves a deadlock by canceling one of its transactions, so the only
-- trace is this counter and the server log's "deadlock detected" entry,
-- which names both statements. Reads pg_stat_database: no locks.
-- NULL-safe: the row of shared objects (datname NULL) is left out;
-- stats_reset is a pointer.
SELECT d.datname::text                              AS database,
       d.deadlocks::int8                            AS deadlocks,
       d.stats_reset,
       current_setting('log_lock_waits') = 'on'     AS log_lock_waits,
       current_setting('deadlock_timeout')          AS deadlock_timeout
FROM pg_stat_database AS d
WHERE d.datname IS NOT NULL
ORDER BY d.deadlocks DESC, d.datname
