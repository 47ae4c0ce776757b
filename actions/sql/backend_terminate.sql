-- backendTerminate: pg_terminate_backend on the guarded target. Ends the
-- session; its whole transaction rolls back. Needs pg_signal_backend (or the
-- same role) for another role's backend. No locks.
SELECT pg_terminate_backend($1)
