-- ConnectionPressure: how close the server is to refusing connections.
-- Ordinary roles may use max_connections minus superuser_reserved_connections
-- and (PostgreSQL 16+) reserved_connections; every backend of a client,
-- a walsender or a background worker takes one of those slots. Rows are the
-- client backends grouped by database, user, application_name and state,
-- most first, each carrying the server-wide figures; client_addr is the
-- group's one client address, 'local' for Unix sockets, or 'N addresses'
-- when the group comes from several hosts. Reads pg_stat_activity: no locks.
-- NULL-safe: datname (unresolvable mid-snapshot), usename, application_name
-- and state (other roles' rows) are coalesced to ''; client_addr is NULL
-- on a Unix socket (and for other roles' rows), read as 'local'.
WITH settings AS (
    SELECT current_setting('max_connections')::int8                          AS max_connections,
           current_setting('superuser_reserved_connections')::int8           AS superuser_reserved,
           coalesce(current_setting('reserved_connections', true), '0')::int8 AS reserved
),
used AS (
    SELECT count(*)::int8 AS used
    FROM pg_stat_activity
    WHERE backend_type IN ('client backend', 'walsender', 'background worker')
)
SELECT coalesce(a.datname::text, '')  AS database,
       coalesce(a.usename::text, '')  AS user_name,
       coalesce(a.application_name, '') AS application_name,
       coalesce(a.state, '')          AS state,
       count(a.pid)::int8             AS connections,
       CASE WHEN count(DISTINCT a.client_addr) > 1
            THEN count(DISTINCT a.client_addr)::text || ' addresses'
            ELSE coalesce(host(min(a.client_addr)), 'local')
       END                            AS client_addr,
       u.used,
       s.max_connections,
       s.superuser_reserved + s.reserved AS reserved
FROM settings AS s
CROSS JOIN used AS u
LEFT JOIN pg_stat_activity AS a ON a.backend_type = 'client backend'
GROUP BY 1, 2, 3, 4, u.used, s.max_connections, s.superuser_reserved, s.reserved
ORDER BY connections DESC, 1, 2, 3, 4
LIMIT 50
