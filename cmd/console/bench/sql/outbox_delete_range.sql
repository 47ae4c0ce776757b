-- outbox_delete_range: removes the relay bench's events, ids $1 to $2.
-- Row locks on them; primary key.
DELETE FROM outbox_events WHERE id BETWEEN $1 AND $2
