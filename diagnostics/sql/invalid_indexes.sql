-- InvalidIndexes: indexes left invalid (a failed or interrupted CREATE INDEX
-- CONCURRENTLY / REINDEX CONCURRENTLY) or not ready: they cost writes and
-- serve no reads (runbook step 12). Reads pg_index and pg_class: no locks on
-- the indexes themselves.
SELECT n.nspname::text                          AS schema_name,
       ic.relname::text                         AS index_name,
       tc.relname::text                         AS table_name,
       i.indisvalid                             AS valid,
       i.indisready                             AS ready,
       pg_get_indexdef(i.indexrelid)            AS definition
FROM pg_index AS i
JOIN pg_class AS ic ON ic.oid = i.indexrelid
JOIN pg_class AS tc ON tc.oid = i.indrelid
JOIN pg_namespace AS n ON n.oid = ic.relnamespace
WHERE NOT i.indisvalid OR NOT i.indisready
ORDER BY n.nspname, ic.relname
