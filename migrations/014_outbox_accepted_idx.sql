-- 014: find the events the broker accepted that the relay has not marked.
--
-- The relay records the broker's acceptance (accepted_at) before it marks an
-- event published; an undelivered event with accepted_at set is one the
-- broker has and the outbox does not know it has: its relay's mark failed or
-- the relay died between the two steps, and the event will be published
-- again (consumers dedupe on the event id). The diagnostics read their count,
-- the oldest and a few ids through this index; normally it holds only the
-- events of the batches in flight, so the probe costs what the in-flight
-- work costs, never the backlog or published history.
--
-- Cost: accepted_at is now indexed, so the relay's acceptance update is no
-- longer a heap-only (HOT) update: it writes one more tuple version's index
-- entries, on an event already updated twice (claim and mark) non-HOT.
CREATE INDEX outbox_accepted_unmarked_idx
    ON outbox_events (accepted_at, id)
    WHERE state IN ('pending', 'inflight') AND accepted_at IS NOT NULL;
