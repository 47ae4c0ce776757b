-- StatementsTop: the 30 statements with the most total execution time from
-- pg_stat_statements (runbook step 10, RB-K), with mean/max time, rows and
-- the buffers and WAL they cost. Only when the extension is installed
-- (columns common to pg_stat_statements 1.8 to 1.12). No table locks; cost
-- grows with pg_stat_statements.max.
-- NULL-safe: queryid (NULL on another role's statement without
-- pg_read_all_stats, whose text reads "<insufficient privilege>") reads as
-- 0, and query (NULL when the query text file cannot be read) as ''.
SELECT coalesce(queryid, 0)::int8               AS queryid,
       calls::int8,
       rows::int8,
       total_exec_time::float8                  AS total_exec_time_ms,
       mean_exec_time::float8                   AS mean_exec_time_ms,
       max_exec_time::float8                    AS max_exec_time_ms,
       mean_plan_time::float8                   AS mean_plan_time_ms,
       shared_blks_hit::int8,
       shared_blks_read::int8,
       temp_blks_written::int8,
       wal_bytes::int8,
       left(coalesce(query, ''), 1000)          AS query
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC
LIMIT 30
