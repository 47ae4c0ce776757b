-- Activity: every backend of the cluster that is doing or holding something
-- (not plain idle), oldest transaction first: runbook step 3. Hides this
-- process's diagnostics backends by pid (console.own_pids), never by name.
-- Reads pg_stat_activity and pg_blocking_pids only: no table locks, cost
-- proportional to max_connections.
-- NULL-safe: the text columns (NULL for walsenders, background workers,
-- other roles' rows without pg_read_all_stats) are coalesced to ''; the
-- timestamps and xmin_age are pointers; the ages of a missing start are 0.
SELECT a.pid,
       coalesce(a.datname, '')                                  AS datname,
       coalesce(a.usename, '')                                  AS usename,
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
       left(coalesce(a.query, ''), 1000)                        AS query
FROM pg_stat_activity AS a
WHERE a.pid <> pg_backend_pid()
  AND a.pid <> ALL (coalesce(string_to_array(nullif(current_setting('console.own_pids', true), ''), ',')::int4[], '{}'))
  AND (a.state IS DISTINCT FROM 'idle' OR a.backend_type <> 'client backend')
  AND a.backend_type NOT IN ('checkpointer', 'background writer', 'walwriter',
                             'logical replication launcher', 'archiver',
                             'autovacuum launcher', 'startup', 'io worker')
ORDER BY a.xact_start NULLS LAST, a.query_start NULLS LAST
LIMIT 500
