-- backendCancel: pg_cancel_backend on the guarded target. Cancels the
-- backend's current statement (its transaction aborts if it is in one, which
-- releases its locks); does nothing to a backend idle in transaction. Needs
-- pg_signal_backend (or the same role) for another role's backend. No locks.
SELECT pg_cancel_backend($1)
