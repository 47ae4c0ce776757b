-- outbox_unpublished: events the relay would publish (pending or in
-- flight); the relay bench refuses to run beside them. Scans outbox_events
-- by state; no locks.
SELECT count(*) FROM outbox_events WHERE state IN ('pending', 'inflight')
