-- Archiver: WAL archiving counters and the last success and failure
-- (runbook step 9, RB-J). failing is true when the last failure is newer
-- than the last success. Reads pg_stat_archiver: no locks; one row.
SELECT current_setting('archive_mode')                     AS archive_mode,
       archived_count::int8,
       failed_count::int8,
       coalesce(last_archived_wal, '')                     AS last_archived_wal,
       last_archived_time,
       coalesce(last_failed_wal, '')                       AS last_failed_wal,
       last_failed_time,
       (last_failed_time IS NOT NULL
        AND (last_archived_time IS NULL OR last_failed_time > last_archived_time)) AS failing,
       stats_reset
FROM pg_stat_archiver
