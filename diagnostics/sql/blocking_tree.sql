-- BlockingTree: every waiting backend and its chain up to the root blocker,
-- walked recursively over pg_blocking_pids(): runbook step 4. A backend
-- blocked by several others is placed at its shortest distance from a root,
-- under the first of its blockers one level up; blocked_by lists all of
-- them. Rows come in tree order (root first, depth-first). Reads pg_stat_activity and pg_locks (one
-- snapshot each): no table locks; pg_blocking_pids is called once per
-- backend, so cost grows with the number of backends, not with data.
WITH RECURSIVE
act AS MATERIALIZED (
    SELECT a.pid, a.state, a.wait_event_type, a.wait_event, a.query,
           a.application_name, a.client_addr, a.backend_type,
           a.backend_start, a.xact_start, a.query_start, a.state_change,
           pg_blocking_pids(a.pid) AS blockers
    FROM pg_stat_activity AS a
    WHERE a.pid <> pg_backend_pid()
      AND NOT (coalesce(a.application_name, '') LIKE 'console-%'
               AND coalesce(a.application_name, '') NOT LIKE 'console-worker%')
),
waits AS (
    SELECT l.pid, min(l.waitstart) AS waitstart
    FROM pg_locks AS l
    WHERE NOT l.granted
    GROUP BY l.pid
),
roots AS (
    SELECT DISTINCT b.pid
    FROM act AS w
    CROSS JOIN LATERAL unnest(w.blockers) AS bp(pid)
    JOIN act AS b ON b.pid = bp.pid
    WHERE cardinality(w.blockers) > 0
      AND cardinality(b.blockers) = 0
),
-- reach: every (backend, distance from a root) pair. UNION (not UNION ALL)
-- drops pairs already found, so a lock queue where each waiter is blocked
-- by every waiter ahead of it stays polynomial instead of walking every
-- path; the depth cap bounds a deadlock cycle until the detector breaks it.
reach (pid, depth) AS (
    SELECT r.pid, 0 FROM roots AS r
    UNION
    SELECT w.pid, r.depth + 1
    FROM reach AS r
    JOIN act AS w ON r.pid = ANY (w.blockers)
    WHERE r.depth < 64
),
placed AS (
    SELECT pid, min(depth) AS depth FROM reach GROUP BY pid
),
-- Each waiter hangs under the first of its blockers one level up.
parented AS (
    SELECT p.pid, p.depth,
           (SELECT u.b
            FROM unnest(a.blockers) WITH ORDINALITY AS u(b, i)
            JOIN placed AS q ON q.pid = u.b AND q.depth = p.depth - 1
            ORDER BY u.i
            LIMIT 1) AS parent_pid
    FROM placed AS p
    JOIN act AS a ON a.pid = p.pid
),
tree (pid, parent_pid, root_pid, depth, path) AS (
    SELECT c.pid, NULL::int4, c.pid, 0, ARRAY[c.pid]
    FROM parented AS c
    WHERE c.depth = 0
    UNION ALL
    SELECT c.pid, t.pid, t.root_pid, c.depth, t.path || c.pid
    FROM tree AS t
    JOIN parented AS c ON c.parent_pid = t.pid AND c.depth = t.depth + 1
)
SELECT p.pid,
       p.parent_pid,
       p.root_pid,
       p.depth,
       a.blockers                                          AS blocked_by,
       coalesce(a.state, '')                               AS state,
       coalesce(a.wait_event_type, '')                     AS wait_event_type,
       coalesce(a.wait_event, '')                          AS wait_event,
       left(coalesce(a.query, ''), 1000)                   AS query,
       coalesce(a.application_name, '')                    AS application_name,
       coalesce(host(a.client_addr), '')                   AS client_addr,
       coalesce(a.backend_type, '')                        AS backend_type,
       a.backend_start,
       a.xact_start,
       a.query_start,
       coalesce(extract(epoch FROM clock_timestamp() - a.xact_start), 0)::float8  AS xact_age_seconds,
       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0)::float8 AS query_age_seconds,
       CASE WHEN p.depth = 0 THEN 0
            ELSE coalesce(extract(epoch FROM clock_timestamp()
                                  - coalesce(w.waitstart, a.state_change)), 0)
       END::float8                                         AS wait_seconds
FROM tree AS p
JOIN act AS a ON a.pid = p.pid
LEFT JOIN waits AS w ON w.pid = p.pid
ORDER BY p.path
