-- counters_clear: drops this session's cached statistics snapshot so that
-- the next read of pg_stat_database sees fresh counters.
SELECT pg_stat_clear_snapshot()
