-- EpisodeLeaderLock: whether this session becomes the one recorder of lock
-- episodes for the database: a session advisory lock, tried, never waited
-- for, held for as long as the recorder's session lives (another console
-- takes over when it ends). in_recovery says the server is a standby,
-- where nothing is recorded (the lock is then released at once). Takes no
-- table locks.
SELECT pg_try_advisory_lock(hashtext('console.lock_episodes')) AS locked,
       pg_is_in_recovery() AS in_recovery
