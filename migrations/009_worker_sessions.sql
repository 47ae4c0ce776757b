-- 007: worker sessions, engine errors and bounded rates.
--
-- backend_pid and backend_started_at name the long-lived database session a
-- worker holds (its LISTEN connection). A worker whose heartbeat is stale
-- and whose session is gone from pg_stat_activity is dead: its leases are
-- reclaimed at once instead of waiting for them to expire. backend_started_at
-- tells a session of the running server from one recorded before a restart
-- (or a reused pid), so a restart does not make every worker look dead.
-- heartbeat_ms is the worker's own heartbeat interval, which says when its
-- heartbeat is stale. reclaimed_at and reclaimed_jobs record the last time
-- another process found the worker dead and took its jobs back.
ALTER TABLE workers
    ADD COLUMN backend_pid        integer,
    ADD COLUMN backend_started_at timestamptz,
    ADD COLUMN heartbeat_ms       integer NOT NULL DEFAULT 1000 CHECK (heartbeat_ms > 0),
    ADD COLUMN reclaimed_at       timestamptz,
    ADD COLUMN reclaimed_jobs     integer NOT NULL DEFAULT 0,
    -- recent_errors: the worker's last engine errors (bounded by the engine),
    -- [{"at": ..., "op": ..., "sqlstate": ..., "error": ...}], newest last.
    ADD COLUMN recent_errors      jsonb   NOT NULL DEFAULT '[]';

-- Rates outside these bounds overflow the engines' token arithmetic (a rate
-- of 1e19 tokens, a wait of 1/5e-324 seconds); nobody means them.
ALTER TABLE queue_settings
    ADD CONSTRAINT queue_settings_rate_bounds
    CHECK (rate_per_second IS NULL OR rate_per_second BETWEEN 0.001 AND 1000000);
ALTER TABLE relay_settings
    ADD CONSTRAINT relay_settings_rate_bounds
    CHECK (rate_per_second IS NULL OR rate_per_second BETWEEN 0.001 AND 1000000);
