-- EpisodeProbe: how many lock requests wait right now, anywhere on the
-- server: the recorder's look every second, one trivial statement while
-- nothing waits. Reads pg_locks (the lock manager's shared table, briefly
-- under its partition locks): no table locks, no index.
SELECT count(*)::int AS waiting FROM pg_locks WHERE NOT granted
