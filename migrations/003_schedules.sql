-- 003: cron schedules. The scheduler leader (advisory lock) enqueues each due
-- run once, with a dedupe key per tick, and moves next_run_at forward in the
-- same transaction.
CREATE TABLE schedules (
    name         text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    spec         text        NOT NULL,
    kind         text        NOT NULL,
    queue        text        NOT NULL DEFAULT 'maintenance',
    payload      jsonb       NOT NULL DEFAULT '{}',
    enabled      boolean     NOT NULL DEFAULT true,
    next_run_at  timestamptz,
    last_run_at  timestamptz,
    last_job_id  bigint,
    created_by   text,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_by   text,
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX schedules_due_idx ON schedules (next_run_at) WHERE enabled;

-- maintenance_runs records each run of a built-in maintenance kind
-- (archive_jobs, prune_outbox, prune_inbox): rows moved, WAL generated, how
-- long it paused for WAL rate or replica lag. An operator stops a run early
-- by setting stop_requested; the run checks it between batches.
CREATE TABLE maintenance_runs (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text        NOT NULL,
    job_id         bigint,
    params         jsonb       NOT NULL DEFAULT '{}',
    state          text        NOT NULL DEFAULT 'running'
                               CHECK (state IN ('running', 'finished', 'stopped', 'failed')),
    rows_moved     bigint      NOT NULL DEFAULT 0,
    batches        integer     NOT NULL DEFAULT 0,
    wal_bytes      numeric     NOT NULL DEFAULT 0,
    paused_seconds double precision NOT NULL DEFAULT 0,
    stop_requested boolean     NOT NULL DEFAULT false,
    last_error     text,
    started_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at    timestamptz
);
CREATE INDEX maintenance_runs_running_idx ON maintenance_runs (kind, id) WHERE state = 'running';
