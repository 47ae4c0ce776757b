-- TableVacuum: dead tuples and last (auto)vacuum/analyze of the tables with
-- the most dead rows, the queue tables always included (runbook steps 6 and
-- 7): queue tables churn, and a held xmin horizon shows here first as dead
-- rows that vacuum cannot remove. queue_table marks the queue tables, whose
-- dead rows findings trace to the xmin horizon's holder. Reads the tables
-- pg_stat_user_tables lists (pg_class and pg_namespace, no pg_index) and
-- their statistics (estimates): no table locks.
-- Narrow first: only the dead-tuple counter is read for every table, and
-- the other counters for the 50 kept. pg_stat_user_tables itself reads all
-- of them for every table and groups pg_index by table for its index scan
-- counts, which on 20,000 tables is most of this check's time.
-- NULL-safe: the counters are never NULL (0 without statistics); the last
-- (auto)vacuum/analyze times are pointers.
WITH tables AS (
    SELECT c.oid, n.nspname, c.relname,
           pg_stat_get_dead_tuples(c.oid) AS n_dead_tup,
           c.relname IN ('jobs', 'jobs_archive', 'outbox_events', 'consumer_inbox',
                         'idempotency_requests', 'queue_settings', 'workers', 'schedules') AS queue_table
    FROM pg_class AS c
    JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 't', 'm', 'p')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_toast'
),
kept AS (
    SELECT * FROM tables
    WHERE queue_table OR n_dead_tup > 0
    ORDER BY n_dead_tup DESC, relname
    LIMIT 50
)
SELECT nspname::text                                          AS schema_name,
       relname::text                                          AS table_name,
       live::int8                                             AS n_live_tup,
       n_dead_tup::int8,
       (n_dead_tup::float8 / greatest(live + n_dead_tup, 1))::float8 AS dead_ratio,
       pg_stat_get_mod_since_analyze(oid)::int8               AS n_mod_since_analyze,
       pg_stat_get_last_vacuum_time(oid)                      AS last_vacuum,
       pg_stat_get_last_autovacuum_time(oid)                  AS last_autovacuum,
       pg_stat_get_last_analyze_time(oid)                     AS last_analyze,
       pg_stat_get_last_autoanalyze_time(oid)                 AS last_autoanalyze,
       pg_stat_get_vacuum_count(oid)::int8                    AS vacuum_count,
       pg_stat_get_autovacuum_count(oid)::int8                AS autovacuum_count,
       queue_table
FROM (SELECT kept.*, pg_stat_get_live_tuples(kept.oid) AS live FROM kept) AS k
ORDER BY n_dead_tup DESC, relname
