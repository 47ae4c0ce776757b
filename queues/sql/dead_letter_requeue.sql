-- DeadLetterRequeue: puts at most $6 dead jobs matching a filter back to
-- ready now, oldest first; $7 resets attempts to 0 (otherwise a spent job
-- gets one more attempt). The errors history and error_class are kept. Jobs
-- whose dedupe key is taken by an unfinished job are skipped. Row locks with
-- SKIP LOCKED; jobs_dead_idx.
WITH picked AS (
    SELECT id
    FROM jobs AS d
    WHERE status = 'dead'
  AND (cardinality($1::bigint[]) = 0 OR id = ANY($1::bigint[]))
  AND ($2::text = '' OR queue = $2)
  AND ($3::text = '' OR error_class = $3)
  AND ($4::timestamptz IS NULL OR finished_at >= $4)
  AND ($5::timestamptz IS NULL OR finished_at < $5)
      AND (d.dedupe_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM jobs a
          WHERE a.queue = d.queue AND a.dedupe_key = d.dedupe_key AND a.status IN ('ready', 'running')))
    ORDER BY id
    LIMIT $6
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs AS j
SET status = 'ready',
    available_at = clock_timestamp(),
    finished_at = NULL,
    attempts = CASE WHEN $7::boolean THEN 0 ELSE j.attempts END
WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
RETURNING j.id
