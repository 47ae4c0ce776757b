-- HistoryMoments: the recorded samples from $1 to $2 whose blocking tree was
-- not empty, newest first, at most $3: the moments worth a look. A range
-- scan of the primary key; reads the blocking_tree key of each document in
-- the range. No locks beyond ACCESS SHARE on history_samples.
SELECT s.sampled_at,
       jsonb_array_length(s.doc -> 'blocking_tree')                        AS backends,
       (SELECT count(*) FROM jsonb_array_elements(s.doc -> 'blocking_tree') AS n
        WHERE (n ->> 'depth')::int > 0)::int                               AS blocked,
       coalesce((s.doc -> 'blocking_tree' -> 0 ->> 'pid')::int4, 0)        AS root_pid
FROM history_samples AS s
WHERE s.sampled_at BETWEEN $1 AND $2
  AND jsonb_typeof(s.doc -> 'blocking_tree') = 'array'
  AND jsonb_array_length(s.doc -> 'blocking_tree') > 0
ORDER BY s.sampled_at DESC
LIMIT $3
