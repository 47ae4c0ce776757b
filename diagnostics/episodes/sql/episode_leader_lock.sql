-- EpisodeLeaderLock: whether this session becomes the one recorder of lock
-- episodes for the database: a session advisory lock, tried, never waited
-- for, held for as long as the recorder's session lives (another console
-- takes over when it ends). in_recovery says the server is a standby,
-- where nothing is recorded (the lock is then released at once).
-- reads_all_stats says the role sees other roles' wait events in
-- pg_stat_activity (pg_read_all_stats, which pg_monitor grants; always
-- true for a superuser), so the cheaper probe sees every wait. Takes no
-- table locks.
SELECT pg_try_advisory_lock(hashtext('console.lock_episodes')) AS locked,
       pg_is_in_recovery() AS in_recovery,
       pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS reads_all_stats
