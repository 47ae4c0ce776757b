-- WorkerHeartbeat: refreshes this process's workers row with its in-flight
-- counts and its last engine errors ($6, newest last), once per poll
-- interval; $4 marks it stopped at shutdown. Row lock on the row; primary
-- key.
UPDATE workers
SET in_flight = $2,
    in_flight_by_queue = $3,
    concurrency = $5,
    recent_errors = $6::jsonb,
    last_seen_at = clock_timestamp(),
    stopped_at = CASE WHEN $4::boolean THEN clock_timestamp() END
WHERE id = $1
