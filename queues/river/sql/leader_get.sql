-- LeaderGet: River's elected leader (river_leader holds at most one row),
-- and whether its lease ran out. No locks. No row: nobody is elected.
SELECT leader_id, elected_at, expires_at, expires_at < now() AS expired
FROM river_leader
ORDER BY expires_at DESC
LIMIT 1
