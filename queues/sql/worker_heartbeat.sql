-- WorkerHeartbeat: refreshes this process's workers row with its in-flight
-- counts and its last engine errors ($6, newest last), once per poll
-- interval; $4 marks it stopped at shutdown and forgets its session (the
-- process closed it). A stopped row stays as it is: a heartbeat can run on
-- the server well after it was sent (a maintenance tick cut short at
-- shutdown, the last statement of a killed process). One exception: a row
-- another process found dead (reclaimed) whose recorded session is alive
-- again. Only a live process records a session (a worker reconnects its
-- LISTEN session after losing it), so a worker wrongly taken for dead comes
-- back once it has a new session, while a late heartbeat of a dead one,
-- whose recorded session is gone (that is how it was found dead), leaves
-- it stopped. Its reclaimed jobs stay fenced either way: the reclaim bumped
-- their generations. Row lock on the row; primary key, and pg_stat_activity
-- for a reclaimed row only.
UPDATE workers AS w
SET in_flight = $2,
    in_flight_by_queue = $3,
    concurrency = $5,
    recent_errors = $6::jsonb,
    last_seen_at = clock_timestamp(),
    stopped_at = CASE WHEN $4::boolean THEN clock_timestamp() END,
    backend_pid = CASE WHEN $4::boolean THEN NULL ELSE w.backend_pid END,
    backend_started_at = CASE WHEN $4::boolean THEN NULL ELSE w.backend_started_at END
WHERE w.id = $1
  AND ($4::boolean
       OR w.stopped_at IS NULL
       OR (w.reclaimed_at IS NOT NULL
           AND w.backend_started_at >= pg_postmaster_start_time()
           AND EXISTS (
               SELECT 1 FROM pg_stat_activity a
               WHERE a.pid = w.backend_pid
                 -- As in WorkerDeadMark: backend_start is NULL for another
                 -- role's sessions without pg_read_all_stats.
                 AND (a.backend_start IS NULL OR a.backend_start = w.backend_started_at))))
