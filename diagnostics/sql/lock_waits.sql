-- LockWaits: ungranted lock requests grouped by the exact thing they wait
-- for (one relation, one row, one transaction id, one advisory key, one
-- catalog object) and mode, most waiters first: "many backends waiting on
-- the same lock" at a glance. Relation names are resolved in the console's
-- database; a relation of another database is named by its oid there.
-- Reads pg_locks once: no table locks. waitstart is PostgreSQL 14+.
-- NULL-safe: database and relation are NULL for locks on no relation
-- (transactionid, virtualxid, advisory) and read as ''; an unresolvable
-- database reads as ''; a lock with no pid (a prepared transaction's) is
-- always granted, so never a waiter here; a NULL waitstart (fast-path)
-- counts as 0 seconds.
WITH here AS (
    SELECT oid FROM pg_database WHERE datname = current_database()
),
w AS (
    SELECT l.*,
           CASE WHEN l.relation IS NULL THEN ''
                WHEN l.database = (SELECT oid FROM here)
                     THEN coalesce(c.oid::regclass::text, 'oid ' || l.relation)
                ELSE 'oid ' || l.relation
           END AS relname
    FROM pg_locks AS l
    LEFT JOIN pg_class AS c
      ON c.oid = l.relation AND l.database = (SELECT oid FROM here)
    WHERE NOT l.granted
      AND l.pid <> pg_backend_pid()
)
SELECT w.locktype,
       coalesce(d.datname::text, '')                                          AS database,
       w.relname                                                              AS relation,
       CASE w.locktype
           WHEN 'relation'      THEN w.relname
           WHEN 'extend'        THEN w.relname
           WHEN 'page'          THEN w.relname || ' page ' || w.page
           WHEN 'tuple'         THEN w.relname || ' row (' || w.page || ',' || w.tuple || ')'
           WHEN 'transactionid' THEN 'transaction ' || w.transactionid
           WHEN 'virtualxid'    THEN 'virtual transaction ' || w.virtualxid
           WHEN 'advisory'      THEN CASE w.objsubid
                                         WHEN 1 THEN 'advisory key ' || ((w.classid::int8 << 32) | w.objid::int8)
                                         ELSE 'advisory keys (' || w.classid::int4 || ', ' || w.objid::int4 || ')'
                                     END
           WHEN 'object'        THEN coalesce(w.classid::regclass::text, 'class ' || w.classid)
                                     || ' ' || w.objid || CASE WHEN w.objsubid <> 0 THEN '.' || w.objsubid ELSE '' END
           ELSE w.locktype
       END                                                                    AS target,
       w.mode,
       count(*)::int8                                                         AS waiting,
       coalesce(max(extract(epoch FROM clock_timestamp() - w.waitstart)), 0)::float8 AS max_wait_seconds,
       array_agg(w.pid ORDER BY w.waitstart NULLS LAST)                       AS pids
FROM w
LEFT JOIN pg_database AS d ON d.oid = w.database
GROUP BY 1, 2, 3, 4, w.mode
ORDER BY waiting DESC, max_wait_seconds DESC
LIMIT 100
