-- WorkerSessionRecord: records the backend of the worker's long-lived
-- session (run on that session, after LISTEN) so that other processes can
-- tell a dead worker from a slow one. Row lock on the row; primary key.
UPDATE workers
SET backend_pid = pg_backend_pid(),
    backend_started_at = (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())
WHERE id = $1
