-- WorkerRestore: puts back this process's workers row when it is gone
-- (deleted by hand while the process ran), with the values WorkerRegister
-- gives it at Start; the session is recorded again by WorkerSessionRecord.
-- A row that is there, stopped by another process that took this one for
-- dead, is left as it is: only a new session brings it back. Row lock on
-- the new row; primary key.
INSERT INTO workers (id, host, pid, queues, concurrency, version, heartbeat_ms, started_at, last_seen_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), clock_timestamp())
ON CONFLICT (id) DO NOTHING
