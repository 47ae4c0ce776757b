-- IdleInTransaction: sessions sitting in an open transaction without running
-- a statement, longest idle first. They hold locks and the xmin horizon while
-- the application does something else (RB-A). Reads pg_stat_activity only:
-- no table locks. Hides this process's diagnostics backends by pid.
-- NULL-safe: the text columns are coalesced to ''; state is never NULL
-- here (filtered); xact_start and state_change are pointers.
SELECT a.pid,
       coalesce(a.datname, '')                                   AS datname,
       coalesce(a.usename, '')                                   AS usename,
       coalesce(a.application_name, '')                          AS application_name,
       coalesce(host(a.client_addr), '')                         AS client_addr,
       a.state,
       a.xact_start,
       a.state_change,
       coalesce(extract(epoch FROM clock_timestamp() - a.state_change), 0)::float8 AS idle_seconds,
       coalesce(extract(epoch FROM clock_timestamp() - a.xact_start), 0)::float8   AS xact_age_seconds,
       left(coalesce(a.query, ''), 1000)                         AS last_query
FROM pg_stat_activity AS a
WHERE a.state IN ('idle in transaction', 'idle in transaction (aborted)')
  AND a.pid <> pg_backend_pid()
  AND a.pid <> ALL (coalesce(string_to_array(nullif(current_setting('console.own_pids', true), ''), ',')::int4[], '{}'))
ORDER BY a.state_change
LIMIT 200
