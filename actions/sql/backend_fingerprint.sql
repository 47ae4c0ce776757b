-- backendFingerprint: one backend, in the columns of activity.sql's rows
-- (diagnostics.Backend): its identity as the backend actions guard it
-- (pid, backend_start, xact_start, query_start: a reused pid or an ended
-- transaction changes them) and what the operator needs to recognise it. is_self and own_database let the action refuse the connection asking
-- and backends of other databases. Reads pg_stat_activity (the transaction's stats snapshot:
-- run it first in a transaction, or on a pool) and pg_blocking_pids once.
-- No locks.
-- NULL-safe: the text columns (NULL for walsenders, background workers,
-- other roles' rows without pg_read_all_stats) are coalesced to ''; the
-- timestamps and xmin_age are pointers; the ages of a missing start are 0.
SELECT a.pid,
       coalesce(a.datname::text, '')                            AS datname,
       coalesce(a.usename::text, '')                            AS usename,
       coalesce(a.application_name, '')                         AS application_name,
       coalesce(host(a.client_addr), '')                        AS client_addr,
       coalesce(a.backend_type, '')                             AS backend_type,
       coalesce(a.state, '')                                    AS state,
       coalesce(a.wait_event_type, '')                          AS wait_event_type,
       coalesce(a.wait_event, '')                               AS wait_event,
       a.backend_start,
       a.xact_start,
       a.query_start,
       a.state_change,
       coalesce(extract(epoch FROM clock_timestamp() - a.xact_start), 0)::float8  AS xact_age_seconds,
       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0)::float8 AS query_age_seconds,
       age(a.backend_xmin)                                      AS xmin_age,
       pg_blocking_pids(a.pid)                                  AS blocked_by,
       left(coalesce(a.query, ''), 1000)                        AS query,
       a.pid = pg_backend_pid()                                 AS is_self,
       current_database()::text                                 AS own_database
FROM pg_stat_activity AS a
WHERE a.pid = $1
