-- EpisodeInsert: records a new episode, open (end_at NULL), and returns its
-- id. Locks: ROW EXCLUSIVE on lock_episodes only.
INSERT INTO lock_episodes (start_at, last_seen_at, recorded_by, root_pid, root_application, root_query,
                           lock_type, lock_mode, lock_target)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING id
