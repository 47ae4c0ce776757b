-- EpisodeProbe: how many sessions of this database wait for a heavyweight
-- lock right now, and a digest of which (their pid, backend start,
-- statement start and wait event, hashed and XORed; 0 when none waits): the
-- recorder's look every second. While nothing waits it is the only
-- statement; while the same sessions wait in the same statements, the
-- digest is unchanged and the recorder skips the full read. Every wait
-- for a heavyweight lock (relation, row, transaction, advisory, object)
-- shows wait_event_type 'Lock'; reading it from pg_stat_activity copies the
-- backends' status, not the lock table, so it costs about a ninth of
-- EpisodeProbeLocks and does not grow with the locks held. Needs
-- pg_read_all_stats (pg_monitor) to see other roles' sessions: without it
-- the recorder runs EpisodeProbeLocks instead.
-- Hidden: this very session. No table locks, no index.
SELECT count(*)::int AS waiting,
       coalesce(bit_xor(hashtextextended(pid || ' ' || coalesce(backend_start::text, '') || ' '
                                         || coalesce(query_start::text, '') || ' ' || coalesce(wait_event, ''), 0)), 0)::int8 AS digest
FROM pg_stat_activity
WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()
