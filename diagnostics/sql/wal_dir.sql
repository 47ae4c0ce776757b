-- WALDir: how much disk pg_wal takes, against what the server is configured
-- to keep there. PostgreSQL keeps about max_wal_size of WAL between
-- checkpoints, and wal_keep_size for standbys; more than that is WAL
-- something holds (a replication slot, an archive_command that fails or
-- hangs, checkpoints that cannot complete) and grows until the WAL disk is
-- full, when the server stops. SQL cannot see free disk space; the size of
-- pg_wal is what it can see. pg_ls_waldir() needs pg_monitor (or superuser):
-- without it readable is false and the sizes are NULL. The listing runs
-- through query_to_xml so that it is planned only when the role may run it
-- (a function named in the statement itself is checked for EXECUTE when the
-- statement starts, even in a CASE branch that is never taken). No locks;
-- one row.
WITH listing AS (
    SELECT has_function_privilege('pg_ls_waldir()', 'EXECUTE') AS readable
), sizes AS (
    SELECT readable,
           CASE WHEN readable
                THEN query_to_xml('SELECT coalesce(sum(size), 0) AS b, count(*) AS n FROM pg_ls_waldir()', false, true, '')
           END AS x
    FROM listing
)
SELECT readable,
       (xpath('/row/b/text()', x))[1]::text::int8                AS wal_bytes,
       (xpath('/row/n/text()', x))[1]::text::int8                AS segments,
       pg_size_bytes(current_setting('max_wal_size'))::int8      AS max_wal_size,
       pg_size_bytes(current_setting('wal_keep_size'))::int8     AS wal_keep_size
FROM sizes
