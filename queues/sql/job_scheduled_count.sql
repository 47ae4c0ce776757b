-- JobScheduledCount: how many ready jobs wait for a later time
-- (available_at after the clock the claim reads), of queue $1 ('' for
-- all), counting at most $2. No locks. An index-only scan of
-- jobs_ready_pick_idx (available_at is one of its columns), so it reads the
-- backlog's index and no heap row of a vacuumed table, and stops at $2.
SELECT count(*)
FROM (
    SELECT 1
    FROM jobs
    WHERE status = 'ready'
      AND available_at > clock_timestamp()
      AND ($1::text = '' OR queue = $1)
    LIMIT $2
) AS scheduled
