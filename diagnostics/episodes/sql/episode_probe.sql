-- EpisodeProbe: how many sessions of this database wait for a heavyweight
-- lock right now, and a digest of the waits (0 when none waits): the
-- recorder's look every second. While nothing waits it is the only
-- statement; while the digest stays the same the recorder skips the full
-- read of who waits on whom.
-- The digest hashes aggregates, not every row: of the waiters, their count,
-- pids, newest statement start, newest state change and wait events; of the
-- sessions that could be the roots (not waiting, in a transaction begun no
-- later than the newest waiter's statement), their count and pids. A new
-- waiter, a waiter gone or in a new statement, and a root that ended its
-- transaction each change it. Every wait for a heavyweight lock (relation,
-- row, transaction, advisory, object) shows wait_event_type 'Lock'.
-- It reads pg_stat_get_activity() directly rather than the pg_stat_activity
-- view, whose joins to pg_database and pg_authid for every backend made the
-- look several times dearer in a storm of 300 waiters. Needs
-- pg_read_all_stats (pg_monitor) to see other roles' sessions: without it
-- the recorder runs EpisodeProbeLocks instead.
-- Hidden: this very session. No table locks, no index.
WITH backends AS MATERIALIZED (
    SELECT pid, state_change, query_start, xact_start, wait_event,
           wait_event_type IS NOT DISTINCT FROM 'Lock' AS waits
    FROM pg_stat_get_activity(NULL)
    WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND pid <> pg_backend_pid()
),
waiters AS (
    SELECT count(*) AS n, sum(pid) AS pids, max(query_start) AS newest, max(state_change) AS changed,
           sum(hashtext(wait_event)) AS events
    FROM backends WHERE waits
),
roots AS (
    SELECT count(*) AS n, sum(b.pid) AS pids
    FROM backends AS b, waiters AS w
    WHERE NOT b.waits AND b.xact_start <= w.newest
)
SELECT w.n::int AS waiting,
       CASE WHEN w.n = 0 THEN 0
            ELSE hashtextextended(concat_ws(' ', w.n, w.pids, w.newest, w.changed, w.events, r.n, r.pids), 0)
       END::int8 AS digest
FROM waiters AS w, roots AS r
