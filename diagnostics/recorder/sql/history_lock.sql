-- HistoryLock: whether this session may record the current sample. A
-- transaction-scoped advisory lock that is only tried, never waited for:
-- another console recording right now makes this false at once, and the
-- lock ends with the transaction. It is its own statement, before
-- HistoryRecent, on purpose: a statement reads with the snapshot taken
-- when it starts, so a check in this same statement could miss a sample
-- committed by a console that released the lock a moment before it was
-- tried here. Takes no table locks.
SELECT pg_try_advisory_xact_lock(hashtext('console.history_samples'))
