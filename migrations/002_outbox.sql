-- 002: transactional outbox, consumer inbox and idempotency keys.
--
-- outbox_events is written in the business transaction and drained by the
-- relay. Its pick index matches the relay's ORDER BY (available_at, id), so a
-- claim never walks published history.
CREATE TABLE outbox_events (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic            text        NOT NULL CHECK (topic <> ''),
    aggregate_type   text        NOT NULL DEFAULT '',
    aggregate_id     text        NOT NULL DEFAULT '',
    event_type       text        NOT NULL CHECK (event_type <> ''),
    headers          jsonb       NOT NULL DEFAULT '{}',
    payload          jsonb       NOT NULL,
    state            text        NOT NULL DEFAULT 'pending'
                                 CHECK (state IN ('pending', 'inflight', 'published', 'dead')),
    available_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_owner      text,
    lease_until      timestamptz,
    lease_generation bigint      NOT NULL DEFAULT 0,
    attempts         integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL DEFAULT 16 CHECK (max_attempts > 0),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- accepted_at is when the broker accepted the event; published_at is when
    -- the relay's fenced mark succeeded. accepted but not marked is the
    -- "published, mark failed" window that can produce a duplicate.
    accepted_at      timestamptz,
    published_at     timestamptz,
    -- publish_count counts broker acceptances; above 1 means the event was
    -- republished after a mark failed or a relay died between publish and
    -- mark (consumers must dedupe on the event id).
    publish_count    integer     NOT NULL DEFAULT 0,
    dead_at          timestamptz,
    CONSTRAINT outbox_inflight_has_lease
        CHECK (state <> 'inflight' OR (lease_owner IS NOT NULL AND lease_until IS NOT NULL))
);

CREATE INDEX outbox_pending_pick_idx
    ON outbox_events (available_at, id)
    WHERE state = 'pending';

CREATE INDEX outbox_inflight_lease_idx
    ON outbox_events (lease_until, id)
    WHERE state = 'inflight';

CREATE INDEX outbox_dead_idx
    ON outbox_events (dead_at, id)
    WHERE state = 'dead';

-- relay_settings is a single row the console changes to pause or throttle
-- every relay process at once.
CREATE TABLE relay_settings (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    paused          boolean     NOT NULL DEFAULT false,
    batch_size      integer     CHECK (batch_size IS NULL OR batch_size > 0),
    rate_per_second double precision CHECK (rate_per_second IS NULL OR rate_per_second > 0),
    updated_by      text,
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);
INSERT INTO relay_settings (singleton) VALUES (true);

-- consumer_inbox records that a consumer applied an event; the key includes
-- the consumer name because each consumer applies every event once.
CREATE TABLE consumer_inbox (
    consumer_name text        NOT NULL,
    event_id      text        NOT NULL,
    processed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (consumer_name, event_id)
);
CREATE INDEX consumer_inbox_processed_at_idx ON consumer_inbox (processed_at);

-- idempotency_requests stores one row per (scope, key): the hash of the
-- request that claimed it and, once completed, the response to replay.
CREATE TABLE idempotency_requests (
    scope           text        NOT NULL DEFAULT '',
    idempotency_key text        NOT NULL CHECK (idempotency_key <> '' AND length(idempotency_key) <= 255),
    request_hash    bytea       NOT NULL,
    state           text        NOT NULL CHECK (state IN ('processing', 'completed')),
    response_code   integer,
    response_body   jsonb,
    locked_until    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (scope, idempotency_key),
    CHECK ((state = 'processing' AND response_code IS NULL)
        OR (state = 'completed' AND response_code IS NOT NULL AND response_body IS NOT NULL))
);
