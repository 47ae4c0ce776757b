-- HistoryStats: how much history is kept: samples, the sum of their
-- document sizes, the table's total size on disk, the oldest and newest
-- sample. Reads the bytes column of every sample (one row per interval, so
-- 60480 rows for 7 days at 10s). No locks beyond ACCESS SHARE.
SELECT count(*)                                        AS samples,
       coalesce(sum(bytes), 0)::int8                   AS doc_bytes,
       pg_total_relation_size('history_samples')::int8 AS table_bytes,
       min(sampled_at)                                 AS oldest,
       max(sampled_at)                                 AS newest
FROM history_samples
