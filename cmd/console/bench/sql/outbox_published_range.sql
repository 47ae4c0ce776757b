-- outbox_published_range: how many of the relay bench's events (ids $1 to
-- $2) are published. Primary key range; no locks.
SELECT count(*) FROM outbox_events WHERE state = 'published' AND id BETWEEN $1 AND $2
