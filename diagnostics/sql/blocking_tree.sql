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
-- other_database marks a row of another database of the server: a job id
-- in its application_name is that database's job, not this one's.
--
-- Each backend that waits says what for: lock_type, lock_target (the
-- target in words: a table by name where this database or a shared catalog
-- resolves it, otherwise "relation OID in database D"; "row (0,1) of jobs";
-- "transaction 1234 of pid N"; "advisory lock 42" or "advisory lock (1,
-- 7)"; an object by pg_describe_object), mode_wanted and lock_key (one
-- key per lockable target). held_keys, held_modes and held_granted say, for
-- each target some backend waits for, the modes this backend holds there
-- ("RowShareLock+RowExclusiveLock"), or, when it holds none (granted
-- false), the mode it requested ahead in the lock's queue; gid_modes,
-- parallel to blocked_by_gids, the modes the prepared transactions hold.
-- pg_locks is read once and matched by the target's key; nothing is built
-- per edge, so a hot row with n waiters (n^2/2 edges) costs what it did.
--
-- Hidden: this very connection and the console's own diagnostics
-- connections, by pid (console.own_pids, set by the session that runs the
-- query), never by application_name, which any client may choose.
-- Reads pg_stat_activity, pg_locks and pg_prepared_xacts: no table locks.
-- NULL-safe: every pg_stat_activity text column (NULL for walsenders,
-- workers, other roles' rows) and a prepared transaction's database and
-- owner (unresolvable mid-snapshot) are coalesced to ''; the timestamps are
-- *time.Time; pg_locks' NULL pid (a prepared transaction's lock) is matched
-- by the target's key and kept out of the edges; the lock columns of a
-- node that waits for no lock, and a blocker's mode on a target it holds no
-- lock on, are ''.
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
locks AS MATERIALIZED (
    SELECT l.pid, l.granted, l.mode, l.locktype, l.database, l.relation, l.page, l.tuple,
           l.virtualxid, l.transactionid, l.classid, l.objid, l.objsubid,
           l.virtualtransaction, l.waitstart,
           concat_ws(':', l.locktype, l.database, l.relation, l.page, l.tuple, l.virtualxid,
                     l.transactionid, l.classid, l.objid, l.objsubid) AS lk
    FROM pg_locks AS l
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
    JOIN locks AS l
      ON l.locktype = 'transactionid' AND l.transactionid = p.transaction
     AND l.pid IS NULL AND l.granted
),
prepared AS MATERIALIZED (
    SELECT w.pid AS waiter, p.gid, p.prepared, p.owner, p.database,
           string_agg(DISTINCT hl.mode, '+') AS held_mode
    FROM waiting AS w
    JOIN locks AS wl ON wl.pid = w.pid AND NOT wl.granted
    JOIN locks AS hl ON hl.granted AND hl.pid IS NULL AND hl.lk = wl.lk
    JOIN pxact AS p ON p.vxid = hl.virtualtransaction
    WHERE 0 = ANY (w.blockers)
    GROUP BY w.pid, p.gid, p.prepared, p.owner, p.database
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
    FROM locks AS l
    WHERE NOT l.granted AND l.pid IN (SELECT pid FROM involved)
    GROUP BY l.pid
),
-- The lock each waiter waits for (a backend waits for one at a time).
wanted AS MATERIALIZED (
    SELECT DISTINCT ON (l.pid) l.*
    FROM locks AS l
    WHERE NOT l.granted AND l.pid IN (SELECT pid FROM involved)
    ORDER BY l.pid, l.waitstart NULLS LAST
),
-- Who holds each transaction id and virtual transaction waited for.
xact_holders AS (
    SELECT l.lk, min(l.pid) AS pid, min(l.virtualtransaction) AS vxid
    FROM locks AS l
    WHERE l.granted AND l.mode = 'ExclusiveLock' AND l.locktype IN ('transactionid', 'virtualxid')
      AND l.lk IN (SELECT DISTINCT lk FROM wanted)
    GROUP BY l.lk
),
here AS (
    SELECT oid FROM pg_database WHERE datname = current_database()
),
targets AS (
    SELECT w.pid, w.lk, w.locktype, w.mode,
           CASE WHEN w.relation IS NULL THEN ''
                WHEN w.database = 0 OR w.database = (SELECT oid FROM here)
                     THEN coalesce(c.oid::regclass::text, 'relation ' || w.relation)
                ELSE 'relation ' || w.relation || ' in database ' || coalesce(d.datname::text, w.database::text)
           END AS relname,
           w.page, w.tuple, w.virtualxid, w.transactionid, w.classid, w.objid, w.objsubid, w.database,
           d.datname, h.pid AS holder, px.gid AS holder_gid
    FROM wanted AS w
    LEFT JOIN pg_class AS c
      ON c.oid = w.relation AND (w.database = 0 OR w.database = (SELECT oid FROM here))
    LEFT JOIN pg_database AS d ON d.oid = w.database
    LEFT JOIN xact_holders AS h ON h.lk = w.lk
    LEFT JOIN pxact AS px ON h.pid IS NULL AND px.vxid = h.vxid
),
target_words AS (
    SELECT t.pid, t.lk, t.locktype, t.mode,
           CASE t.locktype
               WHEN 'relation'      THEN t.relname
               WHEN 'extend'        THEN 'extension of ' || t.relname
               WHEN 'page'          THEN 'page ' || t.page || ' of ' || t.relname
               WHEN 'tuple'         THEN 'row (' || t.page || ',' || t.tuple || ') of ' || t.relname
               WHEN 'transactionid' THEN 'transaction ' || t.transactionid
                                         || coalesce(' of pid ' || t.holder, ' of prepared transaction ' || quote_literal(t.holder_gid), '')
               WHEN 'virtualxid'    THEN 'virtual transaction ' || t.virtualxid || coalesce(' of pid ' || t.holder, '')
               WHEN 'advisory'      THEN 'advisory lock ' || CASE t.objsubid
                                             WHEN 1 THEN ((t.classid::int8 << 32) | t.objid::int8)::text
                                             ELSE '(' || (t.classid::int8 - CASE WHEN t.classid::int8 >= 2147483648 THEN 4294967296 ELSE 0 END)
                                                  || ', ' || (t.objid::int8 - CASE WHEN t.objid::int8 >= 2147483648 THEN 4294967296 ELSE 0 END) || ')'
                                         END
                                         || CASE WHEN t.database <> (SELECT oid FROM here)
                                                 THEN ' in database ' || coalesce(t.datname::text, t.database::text) ELSE '' END
               WHEN 'object'        THEN CASE WHEN t.database = 0 OR t.database = (SELECT oid FROM here)
                                                  THEN pg_describe_object(t.classid, t.objid, t.objsubid) END
               ELSE NULL
           END AS target,
           t.classid, t.objid, t.objsubid, t.database, t.datname
    FROM targets AS t
),
-- What each backend holds (or requested first) on the targets waited for,
-- one entry per target: the Go side reads the mode a waiter's blocker holds
-- on the waiter's target from it, so no row per edge is built here.
held AS (
    SELECT l.pid, l.lk,
           coalesce(string_agg(l.mode, '+' ORDER BY l.mode) FILTER (WHERE l.granted),
                    string_agg(l.mode, '+' ORDER BY l.mode)) AS mode,
           bool_or(l.granted)                                AS granted
    FROM locks AS l
    JOIN (SELECT DISTINCT lk FROM wanted) AS wk ON wk.lk = l.lk
    WHERE l.pid IS NOT NULL
    GROUP BY l.pid, l.lk
),
held_by_pid AS (
    SELECT pid, array_agg(lk ORDER BY lk) AS held_keys, array_agg(mode ORDER BY lk) AS held_modes,
           array_agg(granted ORDER BY lk) AS held_granted
    FROM held
    GROUP BY pid
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
       END::float8                                                  AS wait_seconds,
       coalesce(tw.locktype, '')                                    AS lock_type,
       coalesce(tw.target,
                CASE WHEN tw.locktype IS NOT NULL
                     THEN tw.locktype || ' ' || concat_ws('/', tw.classid, tw.objid, tw.objsubid)
                          || coalesce(' in database ' || coalesce(tw.datname::text, tw.database::text), '')
                END, '')                                            AS lock_target,
       coalesce(tw.mode, '')                                        AS mode_wanted,
       coalesce(tw.lk, '')                                          AS lock_key,
       coalesce(hp.held_keys, '{}')                                 AS held_keys,
       coalesce(hp.held_modes, '{}')                                AS held_modes,
       coalesce(hp.held_granted, '{}')                              AS held_granted,
       coalesce((SELECT array_agg(coalesce(p.held_mode, '') ORDER BY p.gid) FROM prepared AS p WHERE p.waiter = i.pid),
                '{}')::text[]                                       AS gid_modes,
       coalesce(a.datname <> current_database(), false)             AS other_database
FROM involved AS i
LEFT JOIN act AS a ON a.pid = i.pid
LEFT JOIN waits AS w ON w.pid = i.pid
LEFT JOIN waiting_edges AS e ON e.pid = i.pid
LEFT JOIN target_words AS tw ON tw.pid = i.pid
LEFT JOIN held_by_pid AS hp ON hp.pid = i.pid
UNION ALL
SELECT DISTINCT ON (p.gid)
       'prepared', 0, p.gid, '{}'::int4[], '{}'::text[],
       'prepared', '', '', '', '', '', '',
       coalesce(p.database::text, ''), coalesce(p.owner::text, ''),
       NULL, p.prepared, NULL, p.prepared,
       extract(epoch FROM clock_timestamp() - p.prepared)::float8, 0, 0,
       '', '', '', '', '{}'::text[], '{}'::text[], '{}'::bool[], '{}'::text[],
       coalesce(p.database <> current_database(), false)
FROM prepared AS p
