-- EpisodePruneAge: deletes up to $2 episodes that started more than $1
-- seconds ago, oldest first, with their participants (ON DELETE CASCADE),
-- in one short statement (callers loop). Uses lock_episodes_start_idx.
-- Locks: ROW EXCLUSIVE on both tables and the deleted rows only.
DELETE FROM lock_episodes
WHERE id IN (SELECT id FROM lock_episodes
             WHERE start_at < clock_timestamp() - make_interval(secs => $1::float8)
             ORDER BY start_at
             LIMIT $2)
