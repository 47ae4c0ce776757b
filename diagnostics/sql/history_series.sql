-- HistorySeries: the evidence of one check ($3) over $1..$2 for a chart,
-- one sample per slice of $4 seconds (the newest of each), oldest first.
-- The slices are picked from the primary key (sampled_at) alone, so only
-- the chosen samples' documents are read. No locks beyond ACCESS SHARE on
-- history_samples.
SELECT h.sampled_at, h.recorded_by, coalesce(h.doc -> $3::text, 'null'::jsonb) AS data
FROM (
    SELECT DISTINCT ON (date_bin(make_interval(secs => $4::float8), sampled_at, $1::timestamptz)) sampled_at
    FROM history_samples
    WHERE sampled_at BETWEEN $1 AND $2
    ORDER BY date_bin(make_interval(secs => $4::float8), sampled_at, $1::timestamptz), sampled_at DESC
) AS picked
JOIN history_samples AS h USING (sampled_at)
ORDER BY h.sampled_at
