-- JobInsertNew: enqueues one job without a dedupe key (EnqueueTx's common
-- case): a plain INSERT, without JobInsert's ON CONFLICT arbiter, its look-up
-- of the job holding the key and its wrapping of the insert in a CTE. When
-- $8 is true, one pg_notify wakes the queue's workers (at most once per
-- notify interval per queue and process, as for JobInsert).
--
-- Returns what the server chose (id, times) and the payload as stored
-- (jsonb's form of it); the engine fills in the rest of the job from what
-- it sent. Sending back every column cost the server an output conversion
-- per column and the engine a decode by name, on the path of every
-- single-row enqueue commit.
INSERT INTO jobs (queue, kind, payload, priority, available_at, max_attempts, tenant_id)
VALUES ($1, $2, $3, $4, coalesce($5::timestamptz, clock_timestamp()), $6, nullif($7, ''))
RETURNING id, payload, available_at, created_at,
          CASE WHEN $8::boolean THEN (SELECT count(*) FROM pg_notify('console_jobs', queue)) ELSE 0 END AS notified
