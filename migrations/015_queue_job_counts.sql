-- 015: ready and running jobs counted per queue as jobs move, and indexes
-- for the job list's error-class and done filters and the dead-letter
-- views' recent deaths.
--
-- The queue pages and the queue health check show each queue's ready and
-- running jobs. Counting them from jobs costs one index entry per ready job
-- (200,000 in a backlog of a 10-million-row table); this table holds the
-- counts, kept exact in the same transaction as the jobs' change, so
-- reading them costs a few rows per queue whatever the backlog.
--
-- Every claim and ack changes these counts, so a single counter row per
-- queue would be a hot row: each claim would hold it until its commit and
-- claims of one queue would commit one at a time. Instead the table is
-- append-only for writers: each statement on jobs that changes a queue's
-- counts inserts one row with its net change (ready and running deltas),
-- and the reader sums the rows of each queue. Inserts never wait on one
-- another. To keep the sum cheap, about one statement in 64 also folds the
-- table into one row per queue (queue_job_count_compact), under a
-- non-blocking advisory lock so only one transaction folds at a time and the
-- others go on: the fold deletes the rows it sees and inserts their sums in
-- one statement, so a reader sees the counts before or after it, never
-- half. Rows of transactions still open are not seen and not folded; they
-- count once they commit, together with the jobs they describe.
--
-- Cost: the triggers are statement triggers with transition tables: one
-- call per INSERT, UPDATE or DELETE statement on jobs, which aggregates the
-- rows it changed (nothing is written when the net change is zero, as for a
-- lease renewal) and inserts one small row per queue it changed. No row
-- trigger fires for claims, acks or enqueues.
CREATE TABLE queue_job_counts (
    queue   text   NOT NULL,
    ready   bigint NOT NULL,
    running bigint NOT NULL
);

-- The table is small but churns (a row in per statement, most deleted by
-- the next fold): vacuum it after a thousand dead rows, not a fifth of it.
ALTER TABLE queue_job_counts SET (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0);

-- queue_job_count_compact folds queue_job_counts into one row per queue
-- (queues whose counts are both zero drop out). 7303 is this fold's
-- advisory lock namespace (7301 the claim limit, 7302 tenant limits).
-- SECURITY DEFINER, like the triggers: the engine's roles need no grant on
-- the table.
CREATE FUNCTION queue_job_count_compact() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(7303, 0) THEN
        RETURN;
    END IF;
    -- Only rows actually deleted are summed, so a fold that raced another
    -- (its rows deleted under it) still moves exactly what it removed.
    WITH gone AS (
        DELETE FROM queue_job_counts RETURNING queue, ready, running
    )
    INSERT INTO queue_job_counts (queue, ready, running)
    SELECT queue, sum(ready), sum(running) FROM gone GROUP BY queue
    HAVING sum(ready) <> 0 OR sum(running) <> 0;
END
$$;

-- queue_job_count_change is the statement trigger of INSERT, UPDATE and
-- DELETE on jobs; each names its transition tables new_jobs and old_jobs.
CREATE FUNCTION queue_job_count_change() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    changed bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO queue_job_counts (queue, ready, running)
        SELECT queue, count(*) FILTER (WHERE status = 'ready'), count(*) FILTER (WHERE status = 'running')
        FROM new_jobs WHERE status IN ('ready', 'running') GROUP BY queue;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO queue_job_counts (queue, ready, running)
        SELECT queue, -count(*) FILTER (WHERE status = 'ready'), -count(*) FILTER (WHERE status = 'running')
        FROM old_jobs WHERE status IN ('ready', 'running') GROUP BY queue;
    ELSE
        INSERT INTO queue_job_counts (queue, ready, running)
        SELECT queue, sum(ready), sum(running)
        FROM (SELECT queue, (status = 'ready')::int AS ready, (status = 'running')::int AS running
              FROM new_jobs WHERE status IN ('ready', 'running')
              UNION ALL
              SELECT queue, -(status = 'ready')::int, -(status = 'running')::int
              FROM old_jobs WHERE status IN ('ready', 'running')) AS d
        GROUP BY queue
        HAVING sum(ready) <> 0 OR sum(running) <> 0;
    END IF;
    GET DIAGNOSTICS changed = ROW_COUNT;
    IF changed > 0 AND random() < 1.0 / 64 THEN
        PERFORM queue_job_count_compact();
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION queue_job_count_clear() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM queue_job_counts;
    RETURN NULL;
END
$$;

REVOKE EXECUTE ON FUNCTION queue_job_count_compact() FROM PUBLIC;

-- Writers wait while the existing jobs are counted, so no change slips
-- between the triggers' creation and the first count.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

-- Transition tables allow one event per trigger, hence three.
CREATE TRIGGER jobs_queue_count_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION queue_job_count_change();
CREATE TRIGGER jobs_queue_count_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION queue_job_count_change();
CREATE TRIGGER jobs_queue_count_delete AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION queue_job_count_change();
CREATE TRIGGER jobs_queue_count_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION queue_job_count_clear();

INSERT INTO queue_job_counts (queue, ready, running)
SELECT queue, count(*) FILTER (WHERE status = 'ready'), count(*) FILTER (WHERE status = 'running')
FROM jobs
WHERE status IN ('ready', 'running')
GROUP BY queue;

-- The job list's filters, each a walk of an index in id order, newest
-- first, that stops after one page. Built here without CONCURRENTLY, as
-- migrations run in a transaction: on a large table, create them by hand
-- with CONCURRENTLY first (the same names), and these statements are
-- skipped.
--
-- An error class without a status (every job of a class, failing now or
-- done after retries): the class of every job that ever failed. Jobs that
-- never failed have no class and never enter it.
CREATE INDEX IF NOT EXISTS jobs_error_class_id_idx ON jobs (error_class, id) WHERE error_class IS NOT NULL;
-- A queue's dead jobs of one class: jobs_dead_idx holds them in death
-- order and the planner, misjudging a class that lives in one queue as
-- rare, sorted the whole class (32,000 jobs) for one page. Dead jobs only.
CREATE INDEX IF NOT EXISTS jobs_dead_queue_class_id_idx ON jobs (queue, error_class, id) WHERE status = 'dead';
-- Done jobs: the newest rows are the ready backlog, so a walk of the
-- primary key read the whole backlog before the first done job. Every ack
-- adds one entry to it.
CREATE INDEX IF NOT EXISTS jobs_done_id_idx ON jobs (id) WHERE status = 'done';

-- The dead-letter views' recent deaths: every job that died within a window
-- (of any class) is one range of this index, queue and class included, so
-- counting a storm's last minutes costs the deaths in the window, not a
-- probe per class. Dead jobs only: a row pays for it once, when it dies.
-- "attempts >= 0" is always true; it is in the predicate so that only a
-- statement that repeats it (the recent-deaths scan) uses the index, never
-- a probe for one class's last death, which must walk jobs_dead_idx.
CREATE INDEX IF NOT EXISTS jobs_dead_finished_idx ON jobs (finished_at) INCLUDE (queue, error_class)
    WHERE status = 'dead' AND attempts >= 0;
