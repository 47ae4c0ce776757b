-- CopyProgress (PostgreSQL 17+): running COPY commands and how far they got,
-- with tuples_skipped (ON_ERROR ignore). Reads pg_stat_progress_copy: no locks.
SELECT p.pid,
       coalesce(p.datname, '')                 AS datname,
       coalesce(c.relname, p.relid::text, '')  AS relation,
       p.command,
       p.type,
       p.bytes_processed::int8,
       p.bytes_total::int8,
       p.tuples_processed::int8,
       p.tuples_excluded::int8,
       p.tuples_skipped::int8,
       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0)::float8 AS running_seconds
FROM pg_stat_progress_copy AS p
LEFT JOIN pg_class AS c ON c.oid = p.relid
LEFT JOIN pg_stat_activity AS a ON a.pid = p.pid
ORDER BY p.pid
