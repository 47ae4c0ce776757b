-- TableVacuum: dead tuples and last (auto)vacuum/analyze of the tables with
-- the most dead rows, the queue tables always included (runbook steps 6 and
-- 7): queue tables churn, and a held xmin horizon shows here first as dead
-- rows that vacuum cannot remove. queue_table marks the queue tables, whose
-- dead rows findings trace to the xmin horizon's holder. Reads
-- pg_stat_user_tables (statistics, estimates): no table locks.
-- NULL-safe: the counters are never NULL (0 without statistics); the last
-- (auto)vacuum/analyze times are pointers.
SELECT schemaname::text                                      AS schema_name,
       relname::text                                         AS table_name,
       n_live_tup::int8,
       n_dead_tup::int8,
       (n_dead_tup::float8 / greatest(n_live_tup + n_dead_tup, 1))::float8 AS dead_ratio,
       n_mod_since_analyze::int8,
       last_vacuum,
       last_autovacuum,
       last_analyze,
       last_autoanalyze,
       vacuum_count::int8,
       autovacuum_count::int8,
       queue_table
FROM (SELECT *, relname IN ('jobs', 'jobs_archive', 'outbox_events', 'consumer_inbox',
                            'idempotency_requests', 'queue_settings', 'workers', 'schedules') AS queue_table
      FROM pg_stat_user_tables) AS t
WHERE queue_table OR n_dead_tup > 0
ORDER BY n_dead_tup DESC, relname
LIMIT 50
