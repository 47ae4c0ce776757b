-- EpisodeProbe: how many sessions of this database wait for a heavyweight
-- lock right now: the recorder's look every second, one trivial statement
-- while nothing waits. Every wait for a heavyweight lock (relation, row,
-- transaction, advisory, object) shows wait_event_type 'Lock'; reading it
-- from pg_stat_activity copies the backends' status, not the lock table,
-- so it costs about a fifth of EpisodeProbeLocks and does not grow with the
-- locks held. Needs pg_read_all_stats (pg_monitor) to see other roles'
-- sessions: without it the recorder runs EpisodeProbeLocks instead.
-- Hidden: this very session. No table locks, no index.
SELECT count(*)::int AS waiting
FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()
