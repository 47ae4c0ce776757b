-- JobSessionTag: names the session a job borrowed through JobConn
-- ("console-worker job=<id>"), so pg_stat_activity.application_name joins a
-- running job to its backend. Session-level setting; no locks.
SELECT set_config('application_name', $1, false)
