-- EpisodeCloseAbandoned: closes the episodes a previous recorder left open
-- (it stopped or lost its session before their end): end_at is the last
-- moment it saw them, end_seen stays false. Run once by a recorder that
-- just took the lock, before it records. Uses lock_episodes_open_idx.
-- Locks: ROW EXCLUSIVE on lock_episodes and the updated rows only.
UPDATE lock_episodes
SET end_at = last_seen_at, end_seen = false,
    bytes = pg_column_size(lock_episodes.*)
            + coalesce((SELECT sum(pg_column_size(p.*)) FROM lock_episode_participants AS p
                        WHERE p.episode_id = lock_episodes.id), 0)::int
WHERE end_at IS NULL
