-- Archiver: WAL archiving counters, the last success and failure, and the
-- backlog of segments waiting to be archived (runbook step 9, RB-J).
-- failing is true when the last failure is newer than the last success.
-- ready_segments counts the .ready files in pg_wal/archive_status (NULL
-- when archiving is off or the role may not list that folder: it needs
-- pg_monitor). The listing runs through query_to_xml, planned only when
-- allowed: a function named in the statement is checked for EXECUTE when
-- it starts, even in a CASE branch never taken. segments_behind is the
-- distance from the segment being written to the last archived one, on a
-- primary with anything archived.
-- A backlog shows here before the first failure is recorded: an archive
-- command that hangs fails nothing. oldest_ready_seconds is the age of the
-- oldest .ready file (same privilege). archiving_configured says whether
-- archive_command or archive_library is set: with archive_mode on and
-- neither, nothing is ever archived and pg_wal keeps every segment. It is
-- NULL when archiving is off (pg_settings, a scan of every setting that
-- costs more than the rest of the statement, is then not read) and when
-- this role may read neither setting (pg_settings hides them without
-- pg_read_all_settings, which pg_monitor has). Reads pg_stat_archiver and the
-- archive status folder: no locks; one row.
-- NULL-safe: the last archived/failed WAL names are coalesced to ''; their
-- times, stats_reset, the two segment counts, oldest_ready_seconds and
-- archiving_configured are pointers.
WITH seg AS (
    SELECT 4294967296 / pg_size_bytes(current_setting('wal_segment_size')) AS per_xlogid
)
SELECT current_setting('archive_mode')                     AS archive_mode,
       a.archived_count::int8,
       a.failed_count::int8,
       coalesce(a.last_archived_wal, '')                   AS last_archived_wal,
       a.last_archived_time,
       coalesce(a.last_failed_wal, '')                     AS last_failed_wal,
       a.last_failed_time,
       (a.last_failed_time IS NOT NULL
        AND (a.last_archived_time IS NULL OR a.last_failed_time > a.last_archived_time)) AS failing,
       a.stats_reset,
       CASE WHEN current_setting('archive_mode') <> 'off'
             AND has_function_privilege('pg_ls_archive_statusdir()', 'EXECUTE')
            THEN (xpath('/row/n/text()',
                        query_to_xml('SELECT count(*) AS n FROM pg_ls_archive_statusdir() AS f WHERE f.name LIKE ''%.ready''',
                                     false, true, '')))[1]::text
       END::int8                                           AS ready_segments,
       CASE WHEN current_setting('archive_mode') <> 'off'
             AND has_function_privilege('pg_ls_archive_statusdir()', 'EXECUTE')
            THEN (xpath('/row/s/text()',
                        query_to_xml('SELECT extract(epoch FROM now() - min(f.modification)) AS s FROM pg_ls_archive_statusdir() AS f WHERE f.name LIKE ''%.ready''',
                                     false, true, '')))[1]::text
       END::float8                                         AS oldest_ready_seconds,
       CASE WHEN current_setting('archive_mode') <> 'off'
            THEN (SELECT bool_or(c.setting <> '') FROM pg_settings AS c
                  WHERE c.name IN ('archive_command', 'archive_library'))
       END                                                 AS archiving_configured,
       CASE WHEN current_setting('archive_mode') <> 'off' AND NOT pg_is_in_recovery()
             AND a.last_archived_wal ~ '^[0-9A-F]{24}$'
            THEN greatest(0,
                   (('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 9, 8))::bit(32)::int8 * s.per_xlogid
                    + ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 17, 8))::bit(32)::int8)
                 - (('x' || substr(a.last_archived_wal, 9, 8))::bit(32)::int8 * s.per_xlogid
                    + ('x' || substr(a.last_archived_wal, 17, 8))::bit(32)::int8)
                 - 1)
       END::int8                                           AS segments_behind
FROM pg_stat_archiver AS a
CROSS JOIN seg AS s
