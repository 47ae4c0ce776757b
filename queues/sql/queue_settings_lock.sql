-- QueueSettingsLockTx: makes sure queue $1 has a settings row (defaults: not
-- paused, no limits) and locks it until the transaction ends, so two
-- operators changing the same queue apply their changes one after the other
-- instead of each writing back what it read before the other committed. The
-- no-op DO UPDATE is what takes the lock when the row exists, also when a
-- concurrent transaction has just inserted it.
-- Locks: row lock on the queue's queue_settings row; primary key.
INSERT INTO queue_settings AS s (queue) VALUES ($1)
ON CONFLICT (queue) DO UPDATE SET queue = s.queue
RETURNING queue
