-- WorkerHeartbeat: refreshes this process's workers row with its in-flight
-- counts and its last engine errors ($6, newest last), once per poll
-- interval; $4 marks it stopped at shutdown. A row the process marked
-- stopped itself (stopped, not reclaimed) stays as it is: a maintenance
-- tick cut short at shutdown may still have its heartbeat run on the
-- server after the final one, and must not revive the row. A row another
-- process found dead (reclaimed) is revived by its next heartbeat. Row lock
-- on the row; primary key.
UPDATE workers
SET in_flight = $2,
    in_flight_by_queue = $3,
    concurrency = $5,
    recent_errors = $6::jsonb,
    last_seen_at = clock_timestamp(),
    stopped_at = CASE WHEN $4::boolean THEN clock_timestamp() END
WHERE id = $1
  AND ($4::boolean OR stopped_at IS NULL OR reclaimed_at IS NOT NULL)
