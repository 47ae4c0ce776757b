-- WorkerRegister: inserts (or revives) this process's row in the workers
-- registry at Start, with its heartbeat interval ($7 milliseconds). The
-- session is recorded later, by WorkerSessionRecord. Row lock on the row;
-- primary key.
INSERT INTO workers (id, host, pid, queues, concurrency, version, heartbeat_ms, started_at, last_seen_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO UPDATE
SET host = excluded.host, pid = excluded.pid, queues = excluded.queues,
    concurrency = excluded.concurrency, version = excluded.version,
    heartbeat_ms = excluded.heartbeat_ms, backend_pid = NULL, backend_started_at = NULL,
    in_flight = 0, in_flight_by_queue = '{}', recent_errors = '[]', started_at = excluded.started_at,
    last_seen_at = excluded.last_seen_at, stopped_at = NULL
