-- CopyProgress (PostgreSQL 14 to 16): running COPY commands and how far they
-- got (runbook step 6, RB-I). tuples_skipped (ON_ERROR ignore) is 17+, NULL
-- here. Reads pg_stat_progress_copy: no locks.
SELECT p.pid,
       coalesce(p.datname, '')                 AS datname,
       coalesce(c.relname, p.relid::text, '')  AS relation,
       p.command,
       p.type,
       p.bytes_processed::int8,
       p.bytes_total::int8,
       p.tuples_processed::int8,
       p.tuples_excluded::int8,
       NULL::int8                              AS tuples_skipped,
       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0)::float8 AS running_seconds
FROM pg_stat_progress_copy AS p
LEFT JOIN pg_class AS c ON c.oid = p.relid
LEFT JOIN pg_stat_activity AS a ON a.pid = p.pid
ORDER BY p.pid
