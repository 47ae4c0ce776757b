-- Wraparound: how far each database, and the oldest tables of this one, are
-- from transaction ID and multixact wraparound. PostgreSQL stops assigning
-- transaction IDs (and the application stops writing) about 2^31 (2.1
-- billion) transactions or multixacts after the oldest unfrozen one;
-- autovacuum's anti-wraparound vacuums start at autovacuum_freeze_max_age.
-- Rows of kind 'database' (every database) and 'table' (the five oldest
-- relations of the console's database by either age), oldest first; a
-- table's database is the console's. Reads pg_database and pg_class: no
-- locks.
-- NULL-safe: nothing read here is NULL (pg_database and pg_class columns
-- are NOT NULL; a database created after the snapshot is simply absent).
SELECT kind, database_name, name, xid_age, mxid_age,
       current_setting('autovacuum_freeze_max_age')::int8           AS freeze_max_age,
       current_setting('autovacuum_multixact_freeze_max_age')::int8 AS multixact_freeze_max_age
FROM (
    SELECT 'database'::text          AS kind,
           d.datname::text           AS database_name,
           d.datname::text           AS name,
           age(d.datfrozenxid)::int8 AS xid_age,
           mxid_age(d.datminmxid)::int8 AS mxid_age
    FROM pg_database AS d
    WHERE d.datallowconn
    UNION ALL
    (SELECT 'table', current_database()::text, c.oid::regclass::text, age(c.relfrozenxid)::int8, mxid_age(c.relminmxid)::int8
     FROM pg_class AS c
     WHERE c.relkind IN ('r', 'm', 't') AND c.relfrozenxid <> '0'
     ORDER BY greatest(age(c.relfrozenxid), mxid_age(c.relminmxid)) DESC
     LIMIT 5)
) AS w
ORDER BY greatest(xid_age, mxid_age) DESC
