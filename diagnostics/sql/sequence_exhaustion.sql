-- SequenceExhaustion: sequences and identity columns closest to their
-- limit, most used first. A sequence's limit is the smaller of its own
-- maximum and the maximum of the integer column it feeds (an int4 column
-- fed by a bigint sequence fails at 2^31-1, not at the sequence's end);
-- the column is found through the sequence's ownership (serial, identity)
-- or a column default that calls nextval on it. Descending sequences are
-- measured towards their minimum. Sequences the console may not read
-- (last_value NULL) or never used are left out. Reads pg_sequences,
-- pg_depend, pg_attrdef and pg_attribute: no locks on the sequences.
WITH seq AS (
    SELECT s.schemaname, s.sequencename,
           (quote_ident(s.schemaname) || '.' || quote_ident(s.sequencename))::regclass AS seqoid,
           s.data_type::text AS data_type, s.last_value, s.min_value, s.max_value, s.increment_by
    FROM pg_sequences AS s
    WHERE s.last_value IS NOT NULL
),
feeds AS (
    -- owned by a column (serial, identity)
    SELECT d.objid AS seqoid, d.refobjid AS tableoid, d.refobjsubid AS attnum
    FROM pg_depend AS d
    WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
      AND d.deptype IN ('a', 'i') AND d.refobjsubid > 0
    UNION
    -- named in a column default
    SELECT d.refobjid, ad.adrelid, ad.adnum
    FROM pg_attrdef AS ad
    JOIN pg_depend AS d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid
                       AND d.refclassid = 'pg_class'::regclass
    JOIN pg_class AS sc ON sc.oid = d.refobjid AND sc.relkind = 'S'
),
fed AS (
    SELECT s.*, f.tableoid::regclass::text AS table_name, a.attname::text AS column_name,
           t.typname::text AS column_type,
           CASE t.typname WHEN 'int2' THEN 32767 WHEN 'int4' THEN 2147483647 END::int8 AS column_max
    FROM seq AS s
    LEFT JOIN feeds AS f ON f.seqoid = s.seqoid
    LEFT JOIN pg_attribute AS a ON a.attrelid = f.tableoid AND a.attnum = f.attnum
    LEFT JOIN pg_type AS t ON t.oid = a.atttypid
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
