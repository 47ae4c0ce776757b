-- NotifyQueue: the fraction of the NOTIFY queue in use (RB-P). It only grows
-- when a listener sits in a long transaction and stops reading; at 1.0
-- every NOTIFY fails. No locks; one row.
SELECT pg_notification_queue_usage()::float8 AS usage
