-- inboxInsert: record that consumer $1 applies event $2, in the caller's
-- transaction. No row inserted means the event was already applied (or is
-- being applied by a concurrent transaction, which this waits for).
-- Locks: the primary key entry of (consumer_name, event_id).
INSERT INTO consumer_inbox (consumer_name, event_id)
VALUES ($1, $2)
ON CONFLICT DO NOTHING
