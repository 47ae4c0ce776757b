-- ReplicationSlots (PostgreSQL 14 to 16): every slot with the WAL it keeps
-- (restart_lsn behind the current position), wal_status (reserved, extended,
-- unreserved, lost), safe_wal_size (bytes left before max_slot_wal_keep_size
-- invalidates it; NULL when unlimited) and the xmin / catalog_xmin it holds
-- back (runbook step 9, RB-B). Reads pg_replication_slots: no locks.
-- NULL-safe: plugin and database (NULL for physical slots) and wal_status
-- (NULL for a slot that never reserved WAL) are coalesced to ''; active_pid,
-- xmin, catalog_xmin, restart_lsn, confirmed_flush_lsn, safe_wal_size and
-- the ages are pointers; retained_bytes of a slot with no restart_lsn is 0.
WITH cur AS (
    SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
                ELSE pg_current_wal_lsn() END AS lsn
),
-- With max_slot_wal_keep_size = -1 nothing caps what a slot retains: the
-- limit is the WAL disk, so the size of pg_wal is evidence (NULL when the
-- role may not list it: it needs pg_monitor). The listing runs through
-- query_to_xml, planned only when allowed: a function named in the
-- statement is checked for EXECUTE when it starts, even in a CASE branch
-- never taken. Both are read once, by the first slot's row, and not at all
-- when there is no slot (the common case, which the sampler meets every
-- sample): listing pg_wal and reading the setting cost more than the rest.
wal AS MATERIALIZED (
    SELECT CASE WHEN current_setting('max_slot_wal_keep_size') = '-1' THEN -1
                ELSE pg_size_bytes(current_setting('max_slot_wal_keep_size')) END AS keep_bytes,
           CASE WHEN has_function_privilege('pg_ls_waldir()', 'EXECUTE')
                THEN (xpath('/row/b/text()',
                            query_to_xml('SELECT sum(size) AS b FROM pg_ls_waldir()', false, true, '')))[1]::text
           END::int8 AS pg_wal_bytes
)
SELECT s.slot_name::text,
       coalesce(s.plugin::text, '')                               AS plugin,
       s.slot_type,
       coalesce(s.database::text, '')                             AS database,
       s.temporary,
       s.active,
       s.active_pid,
       s.xmin::text                                               AS xmin,
       s.catalog_xmin::text                                       AS catalog_xmin,
       age(s.xmin)                                                AS xmin_age,
       age(s.catalog_xmin)                                        AS catalog_xmin_age,
       s.restart_lsn::text                                        AS restart_lsn,
       s.confirmed_flush_lsn::text                                AS confirmed_flush_lsn,
       coalesce(pg_wal_lsn_diff(cur.lsn, s.restart_lsn), 0)::int8 AS retained_bytes,
       coalesce(s.wal_status, '')                                 AS wal_status,
       s.safe_wal_size::int8                                      AS safe_wal_size,
       (SELECT keep_bytes FROM wal)                               AS max_slot_wal_keep_bytes,
       (SELECT pg_wal_bytes FROM wal)                             AS pg_wal_bytes,
       NULL::timestamptz                                          AS inactive_since,
       ''::text                                                   AS invalidation_reason
FROM pg_replication_slots AS s
CROSS JOIN cur
ORDER BY retained_bytes DESC, s.slot_name
