-- HistorySeries: the evidence of one check ($3) over $1..$2 for a chart,
-- one sample per slice of $4 seconds (the newest of each), oldest first,
-- and the sample shown at the moment $5 (the newest at or before it, within
-- 30 seconds; none when $5 is NULL), so the chart never hides the moment a
-- page shows. The samples are picked from the primary key (sampled_at)
-- alone, so only the chosen samples' documents are read. No locks beyond
-- ACCESS SHARE on history_samples.
WITH picked AS (
    (SELECT DISTINCT ON (date_bin(make_interval(secs => $4::float8), sampled_at, $1::timestamptz)) sampled_at
     FROM history_samples
     WHERE sampled_at BETWEEN $1 AND $2
     ORDER BY date_bin(make_interval(secs => $4::float8), sampled_at, $1::timestamptz), sampled_at DESC)
    UNION
    SELECT max(sampled_at)
    FROM history_samples
    WHERE sampled_at BETWEEN $1 AND $2
      AND sampled_at <= $5::timestamptz
      AND sampled_at >= $5::timestamptz - interval '30 seconds'
)
SELECT h.sampled_at, h.recorded_by, coalesce(h.doc -> $3::text, 'null'::jsonb) AS data
FROM picked
JOIN history_samples AS h USING (sampled_at)
ORDER BY h.sampled_at
