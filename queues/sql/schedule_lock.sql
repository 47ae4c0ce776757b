-- ScheduleLockTx: locks schedule $1's row until the transaction ends (0 rows
-- when it does not exist), so two operators changing the same schedule apply
-- their changes one after the other instead of each writing back what it
-- read before the other committed. Locks: row lock on schedules; primary key.
SELECT count(*) FROM (SELECT 1 FROM schedules WHERE name = $1 FOR UPDATE) AS locked
