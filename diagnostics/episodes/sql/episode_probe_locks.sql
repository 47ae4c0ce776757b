-- EpisodeProbeLocks: how many lock requests wait right now, anywhere on
-- the server, with digest 0 (unknown: every look that finds a wait reads
-- who waits on whom): the recorder's look every second when its role may
-- not read other roles' wait events (no pg_read_all_stats), one trivial
-- statement while nothing waits. Reads pg_locks, which copies the lock
-- manager's shared table under its partition locks, so its cost grows with
-- the locks held server-wide: no table locks, no index.
SELECT count(*)::int AS waiting, 0::int8 AS digest FROM pg_locks WHERE NOT granted
