-- The outbox backlog's age is measured from the creation of the oldest
-- event not yet delivered, whether it is ready, waiting in retry backoff or
-- in flight. This partial index answers that with one probe and holds only
-- undelivered events, so published history never enters it.
CREATE INDEX outbox_undelivered_created_idx
    ON outbox_events (created_at)
    WHERE state IN ('pending', 'inflight');
