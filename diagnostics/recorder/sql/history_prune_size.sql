-- HistoryPruneSize: delete up to $2 of the oldest samples while the stored
-- documents add up to more than $1 bytes, keeping the newest. The running
-- sum walks the primary key backwards and reads only the bytes column.
-- Locks: ROW EXCLUSIVE on history_samples and the deleted rows only.
DELETE FROM history_samples
WHERE sampled_at IN (
    SELECT sampled_at FROM (
        SELECT sampled_at, sum(bytes) OVER (ORDER BY sampled_at DESC) AS newer_bytes
        FROM history_samples
    ) AS s
    WHERE s.newer_bytes > $1
    ORDER BY sampled_at
    LIMIT $2)
