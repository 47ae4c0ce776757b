-- scheduleNow: the database clock, which every schedule time is computed
-- from (never the process clock). No locks.
SELECT clock_timestamp()
