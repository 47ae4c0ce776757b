-- Detect: whether the database holds River's schema, as the search path
-- resolves it: river_job, river_queue, river_leader and river_migration
-- (the tables the console reads; river_client is River's own bookkeeping
-- and optional). No locks, no table read: to_regclass reads the catalog.
SELECT to_regclass('river_job') IS NOT NULL AS has_job,
       to_regclass('river_queue') IS NOT NULL AS has_queue,
       to_regclass('river_leader') IS NOT NULL AS has_leader,
       to_regclass('river_migration') IS NOT NULL AS has_migration
