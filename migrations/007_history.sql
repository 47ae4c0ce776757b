-- 006: the flight recorder. One row per recorded sample (default every 10s):
-- the evidence an on-call engineer needs after the fact, as one jsonb
-- document keyed by check (blocking_tree, activity, wait_events, wal,
-- replication, slots, queues, outbox, findings). One row per sample rather
-- than one per check keeps the write to a single tuple and index entry, and
-- lets TOAST compress the whole document at once (the checks repeat the same
-- keys, which compress well). `bytes` is the document's size as jsonb before
-- TOAST compression (an upper bound of what it takes on disk), so the size
-- cap is enforced, conservatively, without reading the documents.
--
-- The table is written by one console at a time (a non-blocking advisory
-- lock, see diagnostics.Recorder), read by the history views, and pruned by
-- the prune_history maintenance kind (retention and size cap), which
-- `console serve` schedules as prune-history when no such schedule exists.
-- Nothing the application touches ever waits on it.
CREATE TABLE history_samples (
    sampled_at  timestamptz NOT NULL PRIMARY KEY,
    recorded_by text        NOT NULL,
    bytes       integer     NOT NULL,
    doc         jsonb       NOT NULL
);

-- alert_notifications makes POST /api/v1/alerts idempotent: Alertmanager
-- repeats a notification (repeat_interval, retries, several Alertmanagers
-- of a cluster), and each alert's firing or resolved notice is acted on
-- once, keyed by its fingerprint, start and status. The row is written in
-- the same transaction that decides to act, so a failed attempt is retried.
CREATE TABLE alert_notifications (
    fingerprint text        NOT NULL,
    starts_at   timestamptz NOT NULL,
    status      text        NOT NULL CHECK (status IN ('firing', 'resolved')),
    alertname   text        NOT NULL,
    labels      jsonb       NOT NULL DEFAULT '{}',
    incident_id bigint      REFERENCES incidents (id),
    received_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (fingerprint, starts_at, status)
);
