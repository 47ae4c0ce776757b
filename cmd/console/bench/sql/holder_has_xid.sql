-- holder_has_xid: whether this session's transaction has an xid (it wrote),
-- so the xmin horizon stays at or before it until it ends. No locks.
SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = pg_backend_pid()
