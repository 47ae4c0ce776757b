-- InvalidIndexes: indexes left invalid (a failed or interrupted CREATE INDEX
-- CONCURRENTLY / REINDEX CONCURRENTLY) or not ready: they cost writes and
-- serve no reads (runbook step 12). Reads pg_index and pg_class: no locks on
-- the indexes themselves. An index still being built is not invalid yet:
-- CREATE INDEX CONCURRENTLY's own index, and REINDEX CONCURRENTLY's
-- "_ccnew" copy, are left out while pg_stat_progress_create_index shows
-- their build.
-- NULL-safe: pg_get_indexdef is NULL for an index dropped while the
-- statement runs and is coalesced to ''; a progress row this role may not
-- read (NULL relid and index_relid) matches nothing, so the index is listed.
-- At most 100 rows, by schema and name: a schema with more invalid indexes
-- than that has one problem to fix, not a list to read.
SELECT n.nspname::text                          AS schema_name,
       ic.relname::text                         AS index_name,
       tc.relname::text                         AS table_name,
       i.indisvalid                             AS valid,
       i.indisready                             AS ready,
       coalesce(pg_get_indexdef(i.indexrelid), '') AS definition
FROM pg_index AS i
JOIN pg_class AS ic ON ic.oid = i.indexrelid
JOIN pg_class AS tc ON tc.oid = i.indrelid
JOIN pg_namespace AS n ON n.oid = ic.relnamespace
WHERE (NOT i.indisvalid OR NOT i.indisready)
  AND NOT EXISTS (
      SELECT 1 FROM pg_stat_progress_create_index AS p
      WHERE p.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND (p.index_relid = i.indexrelid
         OR (p.relid = i.indrelid AND p.command = 'REINDEX CONCURRENTLY'
             AND ic.relname LIKE '%\_ccnew%')))
ORDER BY n.nspname, ic.relname
LIMIT 100
