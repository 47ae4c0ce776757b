-- backendFingerprint: the identity of one backend as the backend actions
-- guard it (pid, backend_start, xact_start, query_start: a reused pid or an
-- ended transaction changes them) and what the operator needs to recognise
-- it. is_self and own_database let the action refuse the connection asking
-- and backends of other databases. Reads pg_stat_activity (the transaction's stats snapshot:
-- run it first in a transaction, or on a pool) and pg_blocking_pids once.
-- No locks.
-- NULL-safe: the text columns (NULL for walsenders, background workers,
-- other roles' rows without pg_read_all_stats) are coalesced to ''; the
-- timestamps are pointers.
SELECT a.pid,
       a.backend_start,
       a.xact_start,
       a.query_start,
       coalesce(a.state, '')                   AS state,
       coalesce(a.application_name, '')        AS application_name,
       coalesce(a.backend_type, '')            AS backend_type,
       coalesce(a.usename::text, '')           AS usename,
       coalesce(a.datname::text, '')           AS datname,
       coalesce(host(a.client_addr), '')       AS client_addr,
       coalesce(a.wait_event_type, '')         AS wait_event_type,
       coalesce(a.wait_event, '')              AS wait_event,
       left(coalesce(a.query, ''), 1000)       AS query,
       pg_blocking_pids(a.pid)                 AS blocked_by,
       a.pid = pg_backend_pid()                AS is_self,
       current_database()::text                AS own_database
FROM pg_stat_activity AS a
WHERE a.pid = $1
