-- EpisodePruneSize: deletes up to $2 of the oldest episodes while the kept
-- episodes' rows add up to more than $1 bytes, keeping the newest. The
-- running sum reads start_at and bytes of every episode (a small row).
-- Locks: ROW EXCLUSIVE on both tables and the deleted rows only.
DELETE FROM lock_episodes
WHERE id IN (
    SELECT id FROM (
        SELECT id, start_at, sum(bytes) OVER (ORDER BY start_at DESC, id DESC) AS newer_bytes
        FROM lock_episodes
    ) AS s
    WHERE s.newer_bytes > $1
    ORDER BY start_at
    LIMIT $2)
