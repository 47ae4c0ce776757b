-- HistoryPruneAge: delete up to $2 samples older than $1 seconds, oldest
-- first, in one short statement (callers loop). Uses the primary key.
-- Locks: ROW EXCLUSIVE on history_samples and the deleted rows only.
DELETE FROM history_samples
WHERE sampled_at IN (SELECT sampled_at FROM history_samples
                     WHERE sampled_at < clock_timestamp() - make_interval(secs => $1::float8)
                     ORDER BY sampled_at
                     LIMIT $2)
