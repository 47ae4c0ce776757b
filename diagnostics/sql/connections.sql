-- Connections: client backends by database, application and state against
-- max_connections (runbook step 2, RB-A): a pool holding connections idle in
-- transaction shows here. Reads pg_stat_activity: no locks.
-- NULL-safe: datname (unresolvable mid-snapshot), application_name and state
-- (other roles' rows without pg_read_all_stats) are coalesced to ''.
SELECT coalesce(datname, '')                               AS datname,
       coalesce(application_name, '')                      AS application_name,
       coalesce(state, '')                                 AS state,
       count(*)::int8                                      AS connections,
       current_setting('max_connections')::int8            AS max_connections
FROM pg_stat_activity
WHERE backend_type = 'client backend'
GROUP BY 1, 2, 3
ORDER BY connections DESC, 1, 2, 3
LIMIT 200
