-- HistoryMoments: for each recorded sample from $1 to $2, one row per root
-- blocker of its blocking tree with how many backends wait behind that root,
-- newest first (the largest root first within a sample), at most $3: the
-- moments worth a look. Chains that share a sample stay apart. A range scan
-- of the primary key; reads the blocking_tree key of each document in the
-- range. No locks beyond ACCESS SHARE on history_samples.
SELECT s.sampled_at,
       jsonb_array_length(s.doc -> 'blocking_tree')        AS backends,
       coalesce((r.node ->> 'blocked_count')::int4, 0)     AS blocked,
       coalesce((r.node ->> 'pid')::int4, 0)               AS root_pid,
       coalesce(r.node ->> 'gid', '')                      AS root_gid
FROM history_samples AS s
CROSS JOIN LATERAL jsonb_array_elements(
         CASE WHEN jsonb_typeof(s.doc -> 'blocking_tree') = 'array'
              THEN s.doc -> 'blocking_tree' ELSE '[]'::jsonb END) AS r(node)
WHERE s.sampled_at BETWEEN $1 AND $2
  AND (r.node ->> 'depth')::int = 0
ORDER BY s.sampled_at DESC, blocked DESC, root_pid, root_gid
LIMIT $3
