-- Indexes for diagnostics that must stay cheap however large the tables
-- grow. Both are partial, so they hold only the rows the question is about.

-- The outbox backlog's age is measured from the creation of the oldest
-- event not yet delivered, whether it is ready, waiting in retry backoff or
-- in flight: one probe, and published history never enters the index.
CREATE INDEX outbox_undelivered_created_idx
    ON outbox_events (created_at)
    WHERE state IN ('pending', 'inflight');

-- Idempotency keys stuck in 'processing' (a caller that died between
-- claiming a key and completing it): completed keys never enter the index.
CREATE INDEX idempotency_processing_idx
    ON idempotency_requests (created_at)
    WHERE state = 'processing';
