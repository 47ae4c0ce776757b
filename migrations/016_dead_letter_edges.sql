-- 016: each dead-letter class also keeps its first and last death and a
-- sample, so the dead-letter views read no dead job.
--
-- The dead-letter pages show, for each (queue, error class) of
-- dead_letter_counts, when it first and last died and the newest dead job
-- with its error. Probing jobs_dead_idx for them costs a few index descents
-- per class shown, and each descent deepens with the jobs table (one level
-- more at ten million rows). These columns hold them, exact, kept by the
-- counting triggers of migration 013 in the same transaction as the change:
--
--   first_finished_at  the earliest finished_at among the class's dead jobs
--   last_finished_at   the latest one, the sample's
--   sample_job_id      the newest dead job (latest finished_at, then highest
--                      id: a deterministic choice between equal times)
--   sample_error       its last_error, cut to 1,000 characters (what a page
--                      shows of it at most)
--
-- Dead jobs without finished_at (the engine always sets it when a job dies)
-- take no part in them; a class made only of such jobs keeps them NULL.
--
-- Cost and concurrency (migration 013's reasoning still holds; this adds):
-- a job entering 'dead' notes its finished_at, id and error as well, and the
-- fold moves the class's first, last and sample by least/greatest with its
-- count in one upsert: a death costs no read of jobs. A job leaving 'dead'
-- (requeue, retry, delete, archive, a change of class or of finished_at)
-- may have been the first, the last or the sample, so for every class a
-- statement removed jobs from and that still has dead jobs the fold
-- recomputes the three in bounded index probes (dead_letter_class_edges:
-- three, five for the class '', which also holds the jobs whose error_class
-- is NULL), whatever the size of the class. A class whose last job left is
-- deleted without a probe, so a whole-class requeue costs none.
--
-- The recount runs after the upsert, as a statement of its own: the upsert
-- has locked the class's counter row (waiting for a transaction that folded
-- into it to commit), and the recount's snapshot, taken after (READ
-- COMMITTED takes one per statement), sees every change committed into that
-- row. A change another transaction has made but not yet folded is not in
-- the recount (a death) or still is (a leave): its own fold, later, moves
-- the recounted row by least/greatest or recounts it again, exact either
-- way. (Under REPEATABLE READ a counter row changed since the snapshot
-- fails the upsert with a serialization error, as it did for the counts.)
-- A dead job whose finished_at or last_error changes leaves its class and
-- enters it again, so the update trigger now also fires for those columns
-- (its WHEN clause still skips every row that is not dead, without a call).
-- Locks in the engine's order, the table before its counters: a statement
-- on jobs holds jobs and its triggers then write dead_letter_counts and
-- dead_letter_count_changes. This migration changes both counters and then
-- drops a trigger on jobs (ACCESS EXCLUSIVE); taken in that order, it
-- deadlocked with any worker whose transaction had changed a job and then
-- killed one. So it takes jobs first, in the strongest mode it needs, and
-- the counters after: a worker mid-transaction finishes first, and nothing
-- reaches the counters meanwhile.
LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE;

ALTER TABLE dead_letter_counts
    ADD COLUMN first_finished_at timestamptz,
    ADD COLUMN last_finished_at  timestamptz,
    ADD COLUMN sample_job_id     bigint,
    ADD COLUMN sample_error      text;

-- Entries (+1) note the job's death; leaves (-1) leave them NULL.
ALTER TABLE dead_letter_count_changes
    ADD COLUMN finished_at timestamptz,
    ADD COLUMN job_id      bigint,
    ADD COLUMN last_error  text;

-- dead_letter_class_edges is the first and last death and the sample of
-- the dead jobs of (queue, error_class) ('' also reads error_class IS
-- NULL), in bounded index probes: the first and the last finished_at are
-- each one entry of jobs_dead_idx (queue, error_class, finished_at), read
-- index-only; the sample is the highest id among the dead jobs that died at
-- that last instant (one, but for jobs dying in the same instant), found by
-- one equality probe of jobs_dead_finished_idx (finished_at) and its
-- included queue and class. That probe names its queue and class with IS
-- NOT DISTINCT FROM, which no index can use: the planner, which cannot see
-- how large a class is, would otherwise be free to walk the whole class in
-- id order (jobs_dead_queue_class_id_idx) looking for the instant.
-- (Ordering the class by finished_at and id in jobs_dead_idx, which holds
-- no id, sorts the whole class.) OFFSET 0 computes the last death once. A
-- single SELECT, STABLE and without SET, so PostgreSQL inlines it into the
-- statement calling it.
CREATE FUNCTION dead_letter_class_edges(q text, ec text)
RETURNS TABLE (first_finished_at timestamptz, last_finished_at timestamptz, sample_job_id bigint, sample_error text)
LANGUAGE sql STABLE AS $$
SELECT f.first_finished_at, f.last_finished_at, s.id, left(s.last_error, 1000)
FROM (SELECT least((SELECT min(j.finished_at) FROM jobs AS j
                    WHERE j.status = 'dead' AND j.queue = q AND j.error_class = ec),
                   (SELECT min(j.finished_at) FROM jobs AS j
                    WHERE ec = '' AND j.status = 'dead' AND j.queue = q AND j.error_class IS NULL)) AS first_finished_at,
             greatest((SELECT max(j.finished_at) FROM jobs AS j
                       WHERE j.status = 'dead' AND j.queue = q AND j.error_class = ec),
                      (SELECT max(j.finished_at) FROM jobs AS j
                       WHERE ec = '' AND j.status = 'dead' AND j.queue = q AND j.error_class IS NULL)) AS last_finished_at
      OFFSET 0) AS f
CROSS JOIN LATERAL (
    SELECT (array_agg(j.id ORDER BY j.id DESC))[1] AS id, (array_agg(j.last_error ORDER BY j.id DESC))[1] AS last_error
    FROM jobs AS j
    WHERE j.status = 'dead' AND j.attempts >= 0 AND j.finished_at = f.last_finished_at
      AND (j.queue, coalesce(j.error_class, '')) IS NOT DISTINCT FROM (q, ec)
) AS s
$$;

REVOKE EXECUTE ON FUNCTION dead_letter_class_edges(text, text) FROM PUBLIC;

-- Writers wait while the functions change and the existing classes are
-- read, so no change slips between them.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE OR REPLACE FUNCTION dead_letter_count_note() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'dead' THEN
        INSERT INTO dead_letter_count_changes (queue, error_class, delta)
        VALUES (OLD.queue, coalesce(OLD.error_class, ''), -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'dead' THEN
        INSERT INTO dead_letter_count_changes (queue, error_class, delta, finished_at, job_id, last_error)
        VALUES (NEW.queue, coalesce(NEW.error_class, ''), 1, NEW.finished_at, NEW.id, left(NEW.last_error, 1000));
    END IF;
    PERFORM set_config('console.dead_letter_changes', 'pending', true);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION dead_letter_count_fold() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF current_setting('console.dead_letter_changes', true) IS DISTINCT FROM 'pending' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('console.dead_letter_changes', '', true);
    -- Only this transaction's notes are visible: other transactions' are
    -- uncommitted, and deleted before they commit. A note's class gets its
    -- net count, its earliest entry and its newest entry as the sample.
    INSERT INTO dead_letter_counts AS c (queue, error_class, dead, first_finished_at, last_finished_at, sample_job_id, sample_error)
    SELECT t.queue, t.error_class, t.dead, t.first_finished_at, s.finished_at, s.job_id, s.last_error
    FROM (SELECT queue, error_class, sum(delta) AS dead, min(finished_at) FILTER (WHERE delta > 0) AS first_finished_at
          FROM dead_letter_count_changes GROUP BY 1, 2) AS t
    LEFT JOIN (SELECT DISTINCT ON (queue, error_class) queue, error_class, finished_at, job_id, last_error
               FROM dead_letter_count_changes
               WHERE delta > 0 AND finished_at IS NOT NULL
               ORDER BY queue, error_class, finished_at DESC, job_id DESC) AS s USING (queue, error_class)
    ON CONFLICT (queue, error_class) DO UPDATE SET
        dead = c.dead + excluded.dead,
        first_finished_at = least(c.first_finished_at, excluded.first_finished_at),
        (last_finished_at, sample_job_id, sample_error) = (
            SELECT CASE WHEN newer THEN excluded.last_finished_at ELSE c.last_finished_at END,
                   CASE WHEN newer THEN excluded.sample_job_id ELSE c.sample_job_id END,
                   CASE WHEN newer THEN excluded.sample_error ELSE c.sample_error END
            FROM (SELECT excluded.sample_job_id IS NOT NULL
                         AND (c.sample_job_id IS NULL
                              OR (excluded.last_finished_at, excluded.sample_job_id) > (c.last_finished_at, c.sample_job_id))
                         AS newer) AS n);
    -- A statement that removed jobs from a class may have removed its
    -- first, last or sample: read them again, now that the row is locked.
    UPDATE dead_letter_counts AS c
    SET first_finished_at = e.first_finished_at, last_finished_at = e.last_finished_at,
        sample_job_id = e.sample_job_id, sample_error = e.sample_error
    FROM (SELECT DISTINCT queue, error_class FROM dead_letter_count_changes WHERE delta < 0) AS l
    CROSS JOIN LATERAL dead_letter_class_edges(l.queue, l.error_class) AS e
    WHERE c.queue = l.queue AND c.error_class = l.error_class AND c.dead > 0;
    DELETE FROM dead_letter_count_changes;
    DELETE FROM dead_letter_counts WHERE dead <= 0;
    RETURN NULL;
END
$$;

-- A dead job whose finished_at or last_error changes leaves its class and
-- enters it again (see above).
DROP TRIGGER jobs_dead_count_update ON jobs;
CREATE TRIGGER jobs_dead_count_update AFTER UPDATE OF status, queue, error_class, finished_at, last_error ON jobs
    FOR EACH ROW WHEN (OLD.status = 'dead' OR NEW.status = 'dead') EXECUTE FUNCTION dead_letter_count_note();

UPDATE dead_letter_counts AS c
SET (first_finished_at, last_finished_at, sample_job_id, sample_error) = (
    SELECT e.first_finished_at, e.last_finished_at, e.sample_job_id, e.sample_error
    FROM dead_letter_class_edges(c.queue, c.error_class) AS e);
