-- 017: a kind's recent run times kept as the jobs finish, instead of an
-- index over every done job.
--
-- Diagnostics flags a running job that has run far longer than its kind
-- usually does, the usual run time being the 95th percentile of the kind's
-- latest 200 done jobs. Migration 011 answered that from jobs_done_kind_idx,
-- an index over every done job: every ack added an entry to it, about a
-- sixth of the ack's work in the database, for a question asked a few
-- times a minute. This migration keeps the samples the question needs and
-- drops the index.
--
-- job_kind_runs holds run times (finished_at - started_at, in seconds), a
-- row per kind per statement that finished jobs of that kind: the statement
-- trigger below reads the statement's transition table (captured for the
-- queue counters already), keeps up to 200 run times per kind and inserts
-- one row per kind. Writers only insert, so concurrent acks never wait on
-- one another. About one statement in 64 also prunes the kinds it touched
-- down to the rows that hold their newest 200 run times, under a
-- non-blocking advisory lock (7304) so only one transaction prunes at a
-- time and the others go on.
--
-- A job counts when a statement sets it done with a finished_at taken
-- during that statement (the acks set clock_timestamp()), so an UPDATE of a
-- long-done job records nothing. A job with no started_at records nothing.
--
-- Its one index is (kind, id): readers and the prune only ever ask for one
-- kind's rows newest first, and a primary key on id alone would cost every
-- insert a second entry and tempt the planner into walking all kinds' rows
-- backwards for one rare kind.
-- Locks: jobs first, in the strongest mode it needs (ACCESS EXCLUSIVE, for
-- the DROP INDEX at the end). Taking SHARE ROW EXCLUSIVE for the trigger and
-- raising it for the drop would deadlock with a session that read jobs and
-- then writes it, which waits on the first lock while holding what the
-- second waits on.
LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE;

CREATE TABLE job_kind_runs (
    id      bigint GENERATED ALWAYS AS IDENTITY,
    kind    text NOT NULL,
    seconds float8[] NOT NULL
);
CREATE INDEX job_kind_runs_kind_id_idx ON job_kind_runs (kind, id);

-- Small but churning (a row in per ack statement, most pruned soon after).
ALTER TABLE job_kind_runs SET (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0);

-- job_kind_runs_prune deletes, for each kind in kinds, the rows older than
-- those that hold its newest 200 run times. Only under READ COMMITTED: a
-- REPEATABLE READ snapshot may predate another prune's commit, and deleting
-- the rows that one deleted would fail the caller's transaction with a
-- serialization error; the next statement prunes instead.
CREATE FUNCTION job_kind_runs_prune(kinds text[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed'
       OR NOT pg_try_advisory_xact_lock(7304, 0) THEN
        RETURN;
    END IF;
    DELETE FROM job_kind_runs AS r
    USING (
        SELECT kind, id
        FROM (SELECT kind, id, sum(cardinality(seconds)) OVER (PARTITION BY kind ORDER BY id DESC ROWS UNBOUNDED PRECEDING)
                         - cardinality(seconds) AS newer
              FROM job_kind_runs
              WHERE kind = ANY (kinds)) AS w
        WHERE w.newer >= 200
    ) AS old
    WHERE r.kind = old.kind AND r.id = old.id;
END
$$;
REVOKE EXECUTE ON FUNCTION job_kind_runs_prune(text[]) FROM PUBLIC;

-- job_kind_runs_record is the statement trigger of UPDATE on jobs.
CREATE FUNCTION job_kind_runs_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    kinds text[];
BEGIN
    WITH added AS (
        INSERT INTO job_kind_runs (kind, seconds)
        SELECT kind, (array_agg(extract(epoch FROM finished_at - started_at)::float8))[1:200]
        FROM new_jobs
        WHERE status = 'done' AND finished_at >= statement_timestamp() AND started_at IS NOT NULL
        GROUP BY kind
        RETURNING kind
    )
    SELECT array_agg(kind) INTO kinds FROM added;
    IF kinds IS NOT NULL AND random() < 1.0 / 64 THEN
        PERFORM job_kind_runs_prune(kinds);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_kind_runs_update AFTER UPDATE ON jobs
    REFERENCING NEW TABLE AS new_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION job_kind_runs_record();

-- The latest 200 run times of every kind with done jobs, found by a loose
-- walk of jobs_done_kind_idx (one descent per kind) before it goes.
INSERT INTO job_kind_runs (kind, seconds)
WITH RECURSIVE kinds AS (
    (SELECT kind FROM jobs WHERE status = 'done' ORDER BY kind LIMIT 1)
    UNION ALL
    SELECT (SELECT j.kind FROM jobs AS j WHERE j.status = 'done' AND j.kind > k.kind ORDER BY j.kind LIMIT 1)
    FROM kinds AS k
    WHERE k.kind IS NOT NULL
)
SELECT k.kind, s.seconds
FROM kinds AS k
CROSS JOIN LATERAL (
    SELECT array_agg(extract(epoch FROM d.finished_at - d.started_at)::float8) AS seconds
    FROM (SELECT j.finished_at, j.started_at
          FROM jobs AS j
          WHERE j.status = 'done' AND j.kind = k.kind
          ORDER BY j.finished_at DESC
          LIMIT 200) AS d
    WHERE d.started_at IS NOT NULL
) AS s
WHERE k.kind IS NOT NULL AND s.seconds IS NOT NULL;

DROP INDEX jobs_done_kind_idx;
