-- EpisodeUpdate: an open episode seen again ($2 last seen), or closed ($3
-- end_at not NULL, end seen): its lists and peaks so far. A closed
-- episode's bytes are its rows' size. Primary key; locks the row only.
UPDATE lock_episodes
SET last_seen_at = $2, end_at = $3, end_seen = $3::timestamptz IS NOT NULL,
    tables = $4, applications = $5, job_kinds = $6, queues = $7,
    peak_waiting = $8, jobs_delayed = $9, claims_delayed = $10, waited_seconds = $11,
    bytes = CASE WHEN $3::timestamptz IS NULL THEN 0 ELSE
                 pg_column_size(lock_episodes.*)
                 + coalesce((SELECT sum(pg_column_size(p.*)) FROM lock_episode_participants AS p
                             WHERE p.episode_id = $1), 0)::int END
WHERE id = $1
