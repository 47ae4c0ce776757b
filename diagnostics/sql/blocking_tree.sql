-- BlockingTree: the wait-for graph of lock waits, as rows the Go side turns
-- into a tree (blocking.go walks it once, breadth-first, from its roots):
-- runbook step 4.
--
-- pg_blocking_pids() is called only for backends waiting on a lock, so the
-- cost grows with the number of waiters, not with max_connections. Every
-- backend that waits, and every backend some waiter waits for, is a row of
-- kind 'backend' (a blocker that pg_stat_activity no longer lists still is,
-- with empty details: roots come from the edges, not from who is listed).
-- A prepared transaction holding the lock is reported by pg_blocking_pids as
-- pid 0; the waiter's ungranted lock is matched to a granted lock with no
-- pid whose virtual transaction is that of a prepared transaction (the one
-- holding the lock on its own transaction id), and the transaction becomes
-- a row of kind 'prepared', named by its gid.
--
-- Hidden: this very connection and the console's own diagnostics
-- connections, by pid (console.own_pids, set by the session that runs the
-- query), never by application_name, which any client may choose.
-- Reads pg_stat_activity, pg_locks and pg_prepared_xacts: no table locks.
-- NULL-safe: every pg_stat_activity text column (NULL for walsenders,
-- workers, other roles' rows) and a prepared transaction's database and
-- owner (unresolvable mid-snapshot) are coalesced to ''; the timestamps are
-- *time.Time; pg_locks' NULL pid (a prepared transaction's lock) is matched
-- with IS NOT DISTINCT FROM and kept out of the edges.
WITH act AS MATERIALIZED (
    SELECT a.pid, a.state, a.wait_event_type, a.wait_event, a.query,
           a.application_name, a.client_addr, a.backend_type,
           a.datname, a.usename,
           a.backend_start, a.xact_start, a.query_start, a.state_change,
           CASE WHEN a.wait_event_type = 'Lock' THEN pg_blocking_pids(a.pid) END AS blockers
    FROM pg_stat_activity AS a
    WHERE a.pid <> pg_backend_pid()
      AND a.pid <> ALL (coalesce(string_to_array(nullif(current_setting('console.own_pids', true), ''), ',')::int4[], '{}'))
),
own AS (
    SELECT pg_backend_pid() AS pid
    UNION ALL
    SELECT unnest(coalesce(string_to_array(nullif(current_setting('console.own_pids', true), ''), ',')::int4[], '{}'))
),
waiting AS (
    SELECT pid, blockers FROM act WHERE cardinality(blockers) > 0
),
-- The console's own connections are no edge's end.
waiting_edges AS (
    SELECT w.pid,
           ARRAY(SELECT b FROM unnest(w.blockers) AS b
                 WHERE b <> 0 AND b NOT IN (SELECT pid FROM own)
                 ORDER BY b) AS blocked_by
    FROM waiting AS w
),
pxact AS (
    SELECT p.gid, p.prepared, p.owner, p.database, l.virtualtransaction AS vxid
    FROM pg_prepared_xacts AS p
    JOIN pg_locks AS l
      ON l.locktype = 'transactionid' AND l.transactionid = p.transaction
     AND l.pid IS NULL AND l.granted
),
prepared AS MATERIALIZED (
    SELECT DISTINCT w.pid AS waiter, p.gid, p.prepared, p.owner, p.database
    FROM waiting AS w
    JOIN pg_locks AS wl ON wl.pid = w.pid AND NOT wl.granted
    JOIN pg_locks AS hl
      ON hl.granted AND hl.pid IS NULL
     AND hl.locktype = wl.locktype
     AND hl.database IS NOT DISTINCT FROM wl.database
     AND hl.relation IS NOT DISTINCT FROM wl.relation
     AND hl.page IS NOT DISTINCT FROM wl.page
     AND hl.tuple IS NOT DISTINCT FROM wl.tuple
     AND hl.virtualxid IS NOT DISTINCT FROM wl.virtualxid
     AND hl.transactionid IS NOT DISTINCT FROM wl.transactionid
     AND hl.classid IS NOT DISTINCT FROM wl.classid
     AND hl.objid IS NOT DISTINCT FROM wl.objid
     AND hl.objsubid IS NOT DISTINCT FROM wl.objsubid
    JOIN pxact AS p ON p.vxid = hl.virtualtransaction
    WHERE 0 = ANY (w.blockers)
),
involved AS (
    SELECT pid FROM waiting_edges WHERE cardinality(blocked_by) > 0
    UNION
    SELECT unnest(blocked_by) FROM waiting_edges
    UNION
    SELECT waiter FROM prepared
),
waits AS (
    SELECT l.pid, min(l.waitstart) AS waitstart
    FROM pg_locks AS l
    WHERE NOT l.granted AND l.pid IN (SELECT pid FROM involved)
    GROUP BY l.pid
)
SELECT 'backend'::text                                              AS kind,
       i.pid,
       ''::text                                                     AS gid,
       coalesce(e.blocked_by, '{}')                                 AS blocked_by,
       coalesce((SELECT array_agg(p.gid ORDER BY p.gid) FROM prepared AS p WHERE p.waiter = i.pid),
                '{}')::text[]                                       AS blocked_by_gids,
       coalesce(a.state, CASE WHEN a.pid IS NULL THEN 'gone' END, '') AS state,
       coalesce(a.wait_event_type, '')                              AS wait_event_type,
       coalesce(a.wait_event, '')                                   AS wait_event,
       left(coalesce(a.query, ''), 1000)                            AS query,
       coalesce(a.application_name, '')                             AS application_name,
       coalesce(host(a.client_addr), '')                            AS client_addr,
       coalesce(a.backend_type, '')                                 AS backend_type,
       coalesce(a.datname, '')                                      AS database,
       coalesce(a.usename, '')                                      AS owner,
       a.backend_start,
       a.xact_start,
       a.query_start,
       NULL::timestamptz                                            AS prepared_at,
       coalesce(extract(epoch FROM clock_timestamp() - a.xact_start), 0)::float8  AS xact_age_seconds,
       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0)::float8 AS query_age_seconds,
       CASE WHEN w.waitstart IS NULL AND a.wait_event_type IS DISTINCT FROM 'Lock' THEN 0
            ELSE coalesce(extract(epoch FROM clock_timestamp() - coalesce(w.waitstart, a.state_change)), 0)
       END::float8                                                  AS wait_seconds
FROM involved AS i
LEFT JOIN act AS a ON a.pid = i.pid
LEFT JOIN waits AS w ON w.pid = i.pid
LEFT JOIN waiting_edges AS e ON e.pid = i.pid
UNION ALL
SELECT DISTINCT ON (p.gid)
       'prepared', 0, p.gid, '{}'::int4[], '{}'::text[],
       'prepared', '', '', '', '', '', '',
       coalesce(p.database::text, ''), coalesce(p.owner::text, ''),
       NULL, p.prepared, NULL, p.prepared,
       extract(epoch FROM clock_timestamp() - p.prepared)::float8, 0, 0
FROM prepared AS p
