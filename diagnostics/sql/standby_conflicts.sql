-- StandbyConflicts: run on a standby, the queries WAL replay canceled, by
-- database and cause (pg_stat_database_conflicts). A snapshot conflict is a
-- query that still needed rows VACUUM on the primary removed; a lock
-- conflict held a lock replay needed (DDL, TRUNCATE, VACUUM truncating a
-- table's end); bufferpin, deadlock, tablespace and (16+) logical-slot
-- conflicts are rarer; total counts every confl_ column the server has, so
-- it needs no version variant. Cumulative since the standby's statistics
-- were reset: a round measures the increase. Zero on a primary. No locks.
-- NULL-safe: the shared row (datname NULL) is left out.
SELECT c.datname::text              AS database,
       c.confl_tablespace::int8     AS tablespace,
       c.confl_lock::int8           AS lock,
       c.confl_snapshot::int8       AS snapshot,
       c.confl_bufferpin::int8      AS bufferpin,
       c.confl_deadlock::int8       AS deadlock,
       (SELECT coalesce(sum(e.value::int8), 0)
        FROM jsonb_each_text(to_jsonb(c)) AS e
        WHERE e.key LIKE 'confl\_%')::int8 AS total
FROM pg_stat_database_conflicts AS c
WHERE c.datname IS NOT NULL
ORDER BY total DESC, c.datname
