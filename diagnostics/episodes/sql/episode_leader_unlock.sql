-- EpisodeLeaderUnlock: gives the recorder's lock back (on a standby, or when
-- the recorder stops without closing its session). Takes no table locks.
SELECT pg_advisory_unlock(hashtext('console.lock_episodes'))
