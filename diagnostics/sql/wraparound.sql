-- Wraparound: how far each database, and the oldest tables of this one, are
-- from transaction ID and multixact wraparound. PostgreSQL stops assigning
-- transaction IDs (and the application stops writing) about 2^31 (2.1
-- billion) transactions or multixacts after the oldest unfrozen one;
-- autovacuum's anti-wraparound vacuums start at autovacuum_freeze_max_age.
-- Rows of kind 'database' (every database) and 'table' (the five oldest
-- relations of the console's database by either age), oldest first; a
-- table's database is the console's. Reads pg_database and pg_class: no
-- locks.
-- The tables are read only once the console's database is old enough for
-- them to matter: its age (the older of its transaction ID and multixact
-- ages) has reached $1, or half of autovacuum_freeze_max_age, whichever is
-- lower. A database's age bounds every one of its tables' (datfrozenxid is
-- the oldest relfrozenxid of its tables), so below that no table is near
-- either; on a young database with 20,000 tables this skips sorting every
-- relation of pg_class. Pass 0 to list them always.
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
       AND (SELECT greatest(age(d.datfrozenxid), mxid_age(d.datminmxid))
            FROM pg_database AS d WHERE d.datname = current_database())
           >= least($1::int8, current_setting('autovacuum_freeze_max_age')::int8 / 2)
     ORDER BY greatest(age(c.relfrozenxid), mxid_age(c.relminmxid)) DESC
     LIMIT 5)
) AS w
ORDER BY greatest(xid_age, mxid_age) DESC
