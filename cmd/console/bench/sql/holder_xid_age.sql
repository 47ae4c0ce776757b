-- holder_xid_age: how many xids were assigned since the xmin holder's
-- write (session $1), -1 when its transaction has no xid; no row when the
-- session is gone. Read at the end of the held phase, it shows the holder
-- pinned the horizon through the load. No locks.
SELECT coalesce(age(backend_xid), -1)::bigint FROM pg_stat_activity WHERE pid = $1
