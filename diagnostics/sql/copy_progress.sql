-- CopyProgress (PostgreSQL 14 to 16): running COPY commands and how far they
-- got (runbook step 6, RB-I). tuples_skipped (ON_ERROR ignore) is 17+, NULL
-- here. Reads pg_stat_progress_copy: no locks.
-- NULL-safe: datname, command and type (NULL until the COPY sets them) are
-- coalesced to ''; relid and the counters (NULL on another role's COPY
-- without pg_read_all_stats) to the oid text or 0.
SELECT p.pid,
       coalesce(p.datname, '')                 AS datname,
       coalesce(c.relname, p.relid::text, '')  AS relation,
       coalesce(p.command, '')                 AS command,
       coalesce(p.type, '')                    AS type,
       coalesce(p.bytes_processed, 0)::int8    AS bytes_processed,
       coalesce(p.bytes_total, 0)::int8        AS bytes_total,
       coalesce(p.tuples_processed, 0)::int8   AS tuples_processed,
       coalesce(p.tuples_excluded, 0)::int8    AS tuples_excluded,
       NULL::int8                              AS tuples_skipped,
       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0)::float8 AS running_seconds
FROM pg_stat_progress_copy AS p
LEFT JOIN pg_class AS c ON c.oid = p.relid
LEFT JOIN pg_stat_activity AS a ON a.pid = p.pid
ORDER BY p.pid
