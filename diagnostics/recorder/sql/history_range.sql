-- HistoryRange: the recorded samples from $1 to $2 (inclusive), oldest
-- first, with the evidence of one check ($3), at most $4 rows. A range scan
-- of the primary key. No locks beyond ACCESS SHARE on history_samples.
SELECT sampled_at, recorded_by, coalesce(doc -> $3::text, 'null'::jsonb) AS data
FROM history_samples
WHERE sampled_at BETWEEN $1 AND $2
ORDER BY sampled_at
LIMIT $4
