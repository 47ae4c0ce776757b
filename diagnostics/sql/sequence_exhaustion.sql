-- SequenceExhaustion: sequences and identity columns closest to their
-- limit, most used first. A sequence's limit is the smaller of its own
-- maximum and the maximum of the integer column it feeds (an int4 column
-- fed by a bigint sequence fails at 2^31-1, not at the sequence's end);
-- the column is found through the sequence's ownership (serial, identity)
-- or a column default that calls nextval on it. Descending sequences are
-- measured towards their minimum. Sequences the console may not read
-- (last_value NULL) or never used are left out. Reads pg_sequence,
-- pg_class, pg_depend, pg_attrdef and pg_attribute, and each sequence's
-- last value: no locks on the sequences.
-- Narrow: the work follows the number of sequences, not the size of the
-- catalog. Each sequence's column is looked up through pg_depend's indexes
-- (by the sequence as depender, then as referenced object), where joining
-- every owned column and every column default of the database first costs
-- a scan of pg_depend and pg_attrdef however few sequences there are.
WITH seq AS MATERIALIZED (
    SELECT c.oid AS seqoid, n.nspname AS schemaname, c.relname AS sequencename,
           s.seqtypid::regtype::text AS data_type,
           CASE WHEN has_sequence_privilege(c.oid, 'SELECT,USAGE') THEN pg_sequence_last_value(c.oid) END AS last_value,
           s.seqmin AS min_value, s.seqmax AS max_value, s.seqincrement AS increment_by
    FROM pg_sequence AS s
    JOIN pg_class AS c ON c.oid = s.seqrelid
    JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.relkind = 'S' AND NOT pg_is_other_temp_schema(n.oid)
),
fed AS (
    SELECT s.*, f.tableoid::regclass::text AS table_name, a.attname::text AS column_name,
           t.typname::text AS column_type,
           CASE t.typname WHEN 'int2' THEN 32767 WHEN 'int4' THEN 2147483647 END::int8 AS column_max
    FROM seq AS s
    LEFT JOIN LATERAL (
        -- owned by a column (serial, identity)
        SELECT d.refobjid AS tableoid, d.refobjsubid AS attnum
        FROM pg_depend AS d
        WHERE d.classid = 'pg_class'::regclass AND d.objid = s.seqoid
          AND d.refclassid = 'pg_class'::regclass
          AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
        UNION
        -- named in a column default
        SELECT ad.adrelid, ad.adnum
        FROM pg_depend AS d
        JOIN pg_attrdef AS ad ON ad.oid = d.objid
        WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = s.seqoid
          AND d.classid = 'pg_attrdef'::regclass
    ) AS f ON true
    LEFT JOIN pg_attribute AS a ON a.attrelid = f.tableoid AND a.attnum = f.attnum
    LEFT JOIN pg_type AS t ON t.oid = a.atttypid
    WHERE s.last_value IS NOT NULL
),
measured AS (
    SELECT schemaname || '.' || sequencename AS sequence_name, data_type,
           coalesce(table_name, '') AS table_name, coalesce(column_name, '') AS column_name,
           coalesce(column_type, '') AS column_type,
           last_value,
           CASE WHEN increment_by > 0 THEN least(max_value, coalesce(column_max, max_value))
                ELSE greatest(min_value, -coalesce(column_max, -min_value)) END AS limit_value,
           CASE WHEN increment_by > 0
                THEN (last_value - min_value)::float8
                     / nullif(least(max_value, coalesce(column_max, max_value)) - min_value, 0)
                ELSE (max_value - last_value)::float8
                     / nullif(max_value - greatest(min_value, -coalesce(column_max, -min_value)), 0)
           END AS used_fraction
    FROM fed
)
SELECT sequence_name, data_type, table_name, column_name, column_type,
       last_value, limit_value, coalesce(used_fraction, 0)::float8 AS used_fraction
FROM measured
ORDER BY used_fraction DESC NULLS LAST, sequence_name
LIMIT 20
