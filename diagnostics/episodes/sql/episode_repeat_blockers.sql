-- EpisodeRepeatBlockers: the root applications that held up the engine's
-- job claims at least $2 times since $1: how many episodes, how long the
-- claims waited in all, the lock targets, and the distinct root statements (at
-- most 5 of each per application). Range scan of lock_episodes_start_idx; takes
-- no locks beyond ACCESS SHARE.
SELECT root_application,
       count(*)::int                                   AS episodes,
       sum(claims_delayed)::int                        AS claims_delayed,
       sum(waited_seconds)::float8                     AS waited_seconds,
       max(coalesce(end_at, last_seen_at))             AS last_at,
       (array_agg(DISTINCT lock_target))[1:5]          AS targets,
       (array_agg(DISTINCT root_query))[1:5]           AS statements
FROM lock_episodes
WHERE start_at >= $1 AND claims_delayed > 0
GROUP BY root_application
HAVING count(*) >= $2
ORDER BY count(*) DESC, root_application
