-- JobListen: subscribes the engine's dedicated wake-up connection to the
-- enqueue notifications (NotifyChannel). Session-level; needs a session
-- connection (not a transaction-mode pooler). No locks.
LISTEN console_jobs
