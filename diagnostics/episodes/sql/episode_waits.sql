-- EpisodeWaits: who waits on whom in this database, when something waits:
-- one row per waiting backend and one per backend some waiter waits for.
-- pg_blocking_pids() is called for the waiters only, so the cost grows with
-- the number of waiters, not with max_connections. A waiter's lock is its
-- ungranted request (type, mode, target, waitstart; a wait for a row is
-- a wait for the transaction that holds it, and is named by the row); a
-- blocker's `held` is what it holds on relations (outside pg_catalog) and
-- advisory keys, at most 10. A prepared transaction holding the lock is blocker pid 0, with
-- no row of its own.
-- Hidden: this very session.
-- Reads pg_stat_activity and pg_locks: no table locks.
-- NULL-safe: every pg_stat_activity text column is coalesced to ''; a pid
-- pg_stat_activity no longer lists (it left since pg_locks was read) keeps
-- empty details; backend_start and wait_start are *time.Time; waitstart is
-- NULL for a moment after a wait starts.
WITH ungranted AS MATERIALIZED (
    SELECT l.pid, l.locktype, l.mode, l.waitstart, l.relation, l.database, l.page, l.tuple,
           l.transactionid, l.virtualxid, l.classid, l.objid, l.objsubid
    FROM pg_locks AS l
    WHERE NOT l.granted AND l.pid IS NOT NULL AND l.pid <> pg_backend_pid()
),
waiters AS MATERIALIZED (
    SELECT DISTINCT ON (u.pid) u.*, pg_blocking_pids(u.pid) AS blockers, t.relation AS row_relation, t.page AS row_page, t.tuple AS row_tuple
    FROM ungranted AS u
    JOIN pg_stat_activity AS a ON a.pid = u.pid AND a.datname = current_database()
    -- A row lock's wait is on the holder's transaction id; the row itself
    -- is the tuple lock the waiter holds meanwhile.
    LEFT JOIN LATERAL (
        SELECT g.relation, g.page, g.tuple FROM pg_locks AS g
        WHERE g.pid = u.pid AND g.granted AND g.locktype = 'tuple' LIMIT 1
    ) AS t ON u.locktype = 'transactionid'
    ORDER BY u.pid, u.waitstart NULLS LAST
),
blockers AS (
    SELECT DISTINCT b AS pid
    FROM waiters AS w, unnest(w.blockers) AS b
    WHERE b <> 0 AND b NOT IN (SELECT pid FROM waiters)
),
involved AS (
    SELECT pid, true AS waits FROM waiters
    UNION ALL
    SELECT pid, false FROM blockers
),
named AS (
    SELECT w.pid, w.locktype, w.mode, w.waitstart, w.blockers,
           CASE WHEN coalesce(w.relation, w.row_relation) IS NULL THEN ''
                WHEN w.relation IS NULL OR w.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                     THEN coalesce(coalesce(w.relation, w.row_relation)::regclass::text, 'oid ' || coalesce(w.relation, w.row_relation))
                ELSE 'oid ' || w.relation
           END AS relname, w.row_page, w.row_tuple,
           w.page, w.tuple, w.transactionid, w.virtualxid, w.classid, w.objid, w.objsubid
    FROM waiters AS w
)
SELECT i.pid,
       i.waits,
       a.backend_start,
       coalesce(a.application_name, '')          AS application_name,
       coalesce(a.state, '')                     AS state,
       left(coalesce(a.query, ''), 1000)         AS query,
       coalesce(n.blockers, '{}')                AS blocked_by,
       coalesce(n.locktype, '')                  AS lock_type,
       coalesce(n.mode, '')                      AS lock_mode,
       coalesce(n.relname, '')                   AS relation,
       coalesce(CASE n.locktype
           WHEN 'relation'      THEN n.relname
           WHEN 'extend'        THEN n.relname
           WHEN 'page'          THEN n.relname || ' page ' || n.page
           WHEN 'tuple'         THEN n.relname || ' row (' || n.page || ',' || n.tuple || ')'
           WHEN 'transactionid' THEN CASE WHEN n.row_page IS NULL THEN 'transaction ' || n.transactionid
                                          ELSE n.relname || ' row (' || n.row_page || ',' || n.row_tuple || '), held by transaction ' || n.transactionid
                                     END
           WHEN 'virtualxid'    THEN 'virtual transaction ' || n.virtualxid
           WHEN 'advisory'      THEN CASE n.objsubid
                                         WHEN 1 THEN 'advisory key ' || ((n.classid::int8 << 32) | n.objid::int8)
                                         ELSE 'advisory keys (' || n.classid::int4 || ', ' || n.objid::int4 || ')'
                                     END
           WHEN 'object'        THEN coalesce(n.classid::regclass::text, 'class ' || n.classid) || ' ' || n.objid
           ELSE n.locktype
       END, '')                                  AS lock_target,
       n.waitstart                               AS wait_start,
       CASE WHEN i.waits THEN '{}'::text[] ELSE ARRAY(
           SELECT h.mode || ' on ' || CASE h.locktype
                      WHEN 'advisory' THEN 'advisory key ' || ((h.classid::int8 << 32) | h.objid::int8)
                      ELSE coalesce(h.relation::regclass::text, 'oid ' || h.relation)
                  END
           FROM pg_locks AS h
           LEFT JOIN pg_class AS c ON c.oid = h.relation
           WHERE h.pid = i.pid AND h.granted
             AND (h.locktype = 'advisory'
                  OR (h.locktype = 'relation' AND c.relnamespace <> 'pg_catalog'::regnamespace AND c.relkind IN ('r', 'p', 'm')))
           ORDER BY h.locktype, h.relation, h.mode
           LIMIT 10)
       END                                       AS held
FROM involved AS i
LEFT JOIN pg_stat_activity AS a ON a.pid = i.pid
LEFT JOIN named AS n ON n.pid = i.pid
ORDER BY i.pid
