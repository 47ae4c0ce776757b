-- HistoryAt: the recorded sample nearest before (or at) $1, no older than
-- $2 seconds before it, with the evidence of one check ($3, a key of the
-- document). Uses the primary key (sampled_at) backwards: one index probe.
-- No locks beyond ACCESS SHARE on history_samples.
SELECT sampled_at, recorded_by, coalesce(doc -> $3::text, 'null'::jsonb) AS data
FROM history_samples
WHERE sampled_at <= $1
  AND sampled_at >= $1 - make_interval(secs => $2::float8)
ORDER BY sampled_at DESC
LIMIT 1
