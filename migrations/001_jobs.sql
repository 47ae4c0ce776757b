-- 001: the job queue.
--
-- jobs holds every job from enqueue to done/dead. The hot indexes are partial so
-- that finished history never enters them: the claim walks jobs_ready_pick_idx,
-- the reaper walks jobs_running_lease_idx, and the dead-letter pages read
-- jobs_dead_idx. Everything else a finished row needs (keyset listing, archive)
-- goes through the primary key, because ids grow with time.
CREATE TABLE jobs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue            text        NOT NULL CHECK (queue <> '' AND length(queue) <= 128),
    kind             text        NOT NULL CHECK (kind <> '' AND length(kind) <= 128),
    payload          jsonb       NOT NULL DEFAULT '{}',
    status           text        NOT NULL DEFAULT 'ready'
                                 CHECK (status IN ('ready', 'running', 'done', 'dead')),
    priority         smallint    NOT NULL DEFAULT 0,
    available_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- lease_owner + lease_generation fence every transition out of 'running':
    -- a worker whose lease was taken over holds an older generation, so its
    -- late ack matches no row.
    lease_owner      text,
    lease_until      timestamptz,
    lease_generation bigint      NOT NULL DEFAULT 0,
    attempts         integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL DEFAULT 8 CHECK (max_attempts > 0),
    last_error       text,
    -- error_class is a short fingerprint (error type + normalised message)
    -- used to group dead letters; errors keeps one entry per failed attempt,
    -- bounded by the engine.
    error_class      text,
    errors           jsonb       NOT NULL DEFAULT '[]',
    dedupe_key       text,
    tenant_id        text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at       timestamptz,
    finished_at      timestamptz,
    CONSTRAINT jobs_running_has_lease
        CHECK (status <> 'running' OR (lease_owner IS NOT NULL AND lease_until IS NOT NULL))
);

CREATE INDEX jobs_ready_pick_idx
    ON jobs (queue, priority DESC, available_at, id)
    WHERE status = 'ready';

-- The reaper scans expired leases across all queues in lease order.
CREATE INDEX jobs_running_lease_idx
    ON jobs (lease_until, id)
    WHERE status = 'running';

-- A dedupe key is unique only while the job is unfinished, so the same key can
-- be enqueued again once the earlier job is done or dead.
CREATE UNIQUE INDEX jobs_dedupe_key_idx
    ON jobs (queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running');

CREATE INDEX jobs_dead_idx
    ON jobs (queue, error_class, finished_at)
    WHERE status = 'dead';

-- jobs_archive keeps finished jobs moved out of the hot table by the
-- archive_jobs kind. Same columns, plain id (no identity), one index.
CREATE TABLE jobs_archive (
    LIKE jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    archived_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (id)
);

-- queue_settings is how an operator throttles the whole fleet: every engine
-- process re-reads it at least once per poll interval. NULL means "no limit
-- beyond the process's own configuration".
CREATE TABLE queue_settings (
    queue           text PRIMARY KEY,
    paused          boolean     NOT NULL DEFAULT false,
    max_workers     integer     CHECK (max_workers IS NULL OR max_workers >= 0),
    rate_per_second double precision CHECK (rate_per_second IS NULL OR rate_per_second > 0),
    updated_by      text,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- workers has one row per engine process, heartbeated; a row whose
-- last_seen_at is old belongs to a process that is gone.
CREATE TABLE workers (
    id           text PRIMARY KEY,
    host         text        NOT NULL,
    pid          integer     NOT NULL,
    queues       text[]      NOT NULL DEFAULT '{}',
    concurrency  integer     NOT NULL DEFAULT 0,
    in_flight    integer     NOT NULL DEFAULT 0,
    -- per-queue in-flight counts, {"queue": n}
    in_flight_by_queue jsonb NOT NULL DEFAULT '{}',
    version      text        NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    stopped_at   timestamptz
);
