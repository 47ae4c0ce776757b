-- 020: lock episodes. The flight recorder samples every 10s, so a lock wait
-- of two seconds leaves no trace there; the episode recorder looks at the
-- ungranted locks every second and keeps each wait it saw as one episode
-- (lock_episodes) and the sessions it involved (lock_episode_participants).
--
-- An episode is a root blocker and everyone waiting behind it, from the
-- first waiter's waitstart to the first look that found none of them
-- waiting any more (end_at, exact to the recorder's interval). A row is
-- written when the episode is first seen, with end_at NULL, and closed when
-- it ends; a console that stops while an episode is open leaves it for the
-- next recorder, which closes it at last_seen_at with end_seen false: the
-- end was not seen, and the page says so.
--
-- The columns the page filters on (tables, applications, job kinds,
-- queues) are copied onto the episode so a filter reads one row per
-- episode; the participants are read only for the episodes shown. `bytes`
-- is the size of the episode's rows (pg_column_size, before TOAST), set
-- when it closes, so the size cap is enforced without reading the rows.
--
-- Written by one console at a time (a session advisory lock, see
-- diagnostics/episodes), pruned by the prune_history maintenance kind.
-- Nothing the application touches ever waits on these tables.
CREATE TABLE lock_episodes (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    start_at            timestamptz NOT NULL,
    last_seen_at        timestamptz NOT NULL,
    end_at              timestamptz,
    end_seen            boolean     NOT NULL DEFAULT false,
    recorded_by         text        NOT NULL,
    -- The root blocker: the session everyone waited behind (pid 0 for a
    -- prepared transaction), its application and statement.
    root_pid            integer     NOT NULL,
    root_application    text        NOT NULL DEFAULT '',
    root_query          text        NOT NULL DEFAULT '',
    -- What the waiters waited for: lock type, mode and target of the first
    -- waiter ("tuple ExclusiveLock jobs row (0,1)").
    lock_type           text        NOT NULL DEFAULT '',
    lock_mode           text        NOT NULL DEFAULT '',
    lock_target         text        NOT NULL DEFAULT '',
    tables              text[]      NOT NULL DEFAULT '{}',
    applications        text[]      NOT NULL DEFAULT '{}',
    job_kinds           text[]      NOT NULL DEFAULT '{}',
    queues              text[]      NOT NULL DEFAULT '{}',
    peak_waiting        integer     NOT NULL DEFAULT 0,
    jobs_delayed        integer     NOT NULL DEFAULT 0,
    -- Waiters that were the engine's job claims: a claim held up means no
    -- job of the queue starts.
    claims_delayed      integer     NOT NULL DEFAULT 0,
    -- The sum of every waiter's wait: the episode's impact.
    waited_seconds      double precision NOT NULL DEFAULT 0,
    bytes               integer     NOT NULL DEFAULT 0
);
CREATE INDEX lock_episodes_start_idx ON lock_episodes (start_at);
-- Open episodes: what a starting recorder closes.
CREATE INDEX lock_episodes_open_idx ON lock_episodes (id) WHERE end_at IS NULL;

-- One row per session of an episode: a waiter, a blocker between, or the
-- root. first_seen_at and last_seen_at bound what the recorder saw of it;
-- a waiter's wait starts at wait_start (pg_locks.waitstart).
CREATE TABLE lock_episode_participants (
    episode_id     bigint      NOT NULL REFERENCES lock_episodes (id) ON DELETE CASCADE,
    seq            smallint    NOT NULL,
    pid            integer     NOT NULL,
    backend_start  timestamptz,
    role           text        NOT NULL CHECK (role IN ('root', 'blocker', 'waiter')),
    blocked_by     integer[]   NOT NULL DEFAULT '{}',
    application    text        NOT NULL DEFAULT '',
    -- fingerprint identifies the statement's shape (literals and
    -- whitespace folded); query is its text, cut to 300 characters.
    fingerprint    text        NOT NULL DEFAULT '',
    query          text        NOT NULL DEFAULT '',
    lock_type      text        NOT NULL DEFAULT '',
    lock_mode      text        NOT NULL DEFAULT '',
    lock_target    text        NOT NULL DEFAULT '',
    -- held: the locks a blocker held on relations and advisory keys.
    held           text[]      NOT NULL DEFAULT '{}',
    job_id         bigint,
    job_kind       text        NOT NULL DEFAULT '',
    queue          text        NOT NULL DEFAULT '',
    wait_start     timestamptz,
    first_seen_at  timestamptz NOT NULL,
    last_seen_at   timestamptz NOT NULL,
    PRIMARY KEY (episode_id, seq)
);
