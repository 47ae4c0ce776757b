-- JobTransactionTag: names the job's transaction ("console-worker
-- job=<id>") behind a pooler in transaction mode, where JobConn's
-- connection is a transaction: SET LOCAL, so the name ends with the
-- transaction and never reaches the next client of the server session.
-- pg_stat_activity.application_name joins the running job to its backend
-- while the transaction lasts. No locks.
SELECT set_config('application_name', $1, true)
