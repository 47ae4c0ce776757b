-- EpisodeStats: how many episodes are kept, their rows' size as recorded
-- (bytes) and on disk (both tables with their indexes and TOAST), and the
-- oldest and newest. Reads every episode's bytes: a small row each.
SELECT count(*)::int8                                           AS episodes,
       coalesce(sum(bytes), 0)::int8                            AS row_bytes,
       (pg_total_relation_size('lock_episodes')
        + pg_total_relation_size('lock_episode_participants'))::int8 AS table_bytes,
       min(start_at)                                            AS oldest,
       max(start_at)                                            AS newest
FROM lock_episodes
