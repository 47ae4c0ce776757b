-- 013: dead letters counted per (queue, error class) as jobs die and leave.
--
-- The dead-letter pages rank classes by size. Counting them from jobs costs
-- one index entry per dead job (a million in a storm); this table holds the
-- count, kept exact in the same transaction as the job's change by triggers
-- on jobs, so reading every class costs one row per class.
--
-- error_class is '' for jobs that died without one. A row whose count
-- drops to zero is deleted, so the table holds only the classes that have
-- dead jobs now. (No CHECK on dead: the fold proposes a row with the
-- statement's net change, negative when jobs left, before it meets the
-- existing row.)
--
-- Cost: the row triggers fire only when a row enters or leaves 'dead' (their
-- WHEN clauses are checked without calling a function) and only note the
-- change in dead_letter_count_changes; a statement trigger folds a
-- statement's notes into one update per class at its end, and returns at
-- once when the statement noted nothing (claims, acks and renewals pay one
-- cheap function call per statement). Folding per statement keeps a bulk
-- statement (a requeue of thousands of jobs of one class) from updating one
-- counter row thousands of times in one transaction, which would make each
-- update walk every earlier version of the row. A transaction that changes
-- dead jobs holds its classes' counter rows until it commits: transactions
-- killing jobs of one class commit one at a time (a job dies once per
-- max_attempts failures, so this is far below the failure rate), and two
-- transactions moving jobs of the same classes in opposite orders can
-- deadlock, which PostgreSQL breaks by failing one of them (the engine's
-- reaper retries on its next tick; an operator's requeue says so and can be
-- run again).
CREATE TABLE dead_letter_counts (
    queue       text   NOT NULL,
    error_class text   NOT NULL,
    dead        bigint NOT NULL,
    PRIMARY KEY (queue, error_class)
);

-- One row per dead job entering (+1) or leaving (-1) its class, written and
-- deleted by the same statement: no row outlives it, so the table needs no
-- index, no WAL (unlogged) and no reader.
CREATE UNLOGGED TABLE dead_letter_count_changes (
    queue       text    NOT NULL,
    error_class text    NOT NULL,
    delta       integer NOT NULL
);

-- SECURITY DEFINER: the engine and operator roles change jobs, and the
-- counts follow without a grant on these tables; search_path is fixed to
-- the schema the migration ran in. The transaction-local setting
-- console.dead_letter_changes tells the statement trigger there is
-- something to fold.
CREATE FUNCTION dead_letter_count_note() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'dead' THEN
        INSERT INTO dead_letter_count_changes VALUES (OLD.queue, coalesce(OLD.error_class, ''), -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'dead' THEN
        INSERT INTO dead_letter_count_changes VALUES (NEW.queue, coalesce(NEW.error_class, ''), 1);
    END IF;
    PERFORM set_config('console.dead_letter_changes', 'pending', true);
    RETURN NULL;
END
$$;

CREATE FUNCTION dead_letter_count_fold() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF current_setting('console.dead_letter_changes', true) IS DISTINCT FROM 'pending' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('console.dead_letter_changes', '', true);
    -- Only this transaction's notes are visible: other transactions' are
    -- uncommitted, and deleted before they commit.
    WITH noted AS (
        DELETE FROM dead_letter_count_changes RETURNING queue, error_class, delta
    )
    INSERT INTO dead_letter_counts AS c (queue, error_class, dead)
    SELECT queue, error_class, sum(delta) FROM noted GROUP BY 1, 2
    ON CONFLICT (queue, error_class) DO UPDATE SET dead = c.dead + excluded.dead;
    DELETE FROM dead_letter_counts WHERE dead <= 0;
    RETURN NULL;
END
$$;

CREATE FUNCTION dead_letter_count_clear() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM dead_letter_counts;
    DELETE FROM dead_letter_count_changes;
    RETURN NULL;
END
$$;

-- Writers wait while the existing dead letters are counted, so no change
-- slips between the triggers' creation and the first count.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER jobs_dead_count_insert AFTER INSERT ON jobs
    FOR EACH ROW WHEN (NEW.status = 'dead') EXECUTE FUNCTION dead_letter_count_note();
CREATE TRIGGER jobs_dead_count_update AFTER UPDATE OF status, queue, error_class ON jobs
    FOR EACH ROW WHEN (OLD.status = 'dead' OR NEW.status = 'dead') EXECUTE FUNCTION dead_letter_count_note();
CREATE TRIGGER jobs_dead_count_delete AFTER DELETE ON jobs
    FOR EACH ROW WHEN (OLD.status = 'dead') EXECUTE FUNCTION dead_letter_count_note();
-- Row AFTER triggers run before statement AFTER triggers, so the fold sees
-- every note of its statement.
CREATE TRIGGER jobs_dead_count_fold AFTER INSERT OR UPDATE OR DELETE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_count_fold();
CREATE TRIGGER jobs_dead_count_truncate AFTER TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION dead_letter_count_clear();

INSERT INTO dead_letter_counts (queue, error_class, dead)
SELECT queue, coalesce(error_class, ''), count(*)
FROM jobs
WHERE status = 'dead'
GROUP BY 1, 2;

-- The job list shows jobs newest first by id. Dead jobs are the oldest rows
-- of a table nobody archived, so a status=dead page walking the primary key
-- backwards reads the whole history first, and jobs_dead_idx (ordered by
-- queue, class and death) would sort the whole pile. These two walk the dead
-- jobs, and those of one class, in id order. Dead jobs only, like
-- jobs_dead_idx: a row pays for them once, when it dies.
CREATE INDEX jobs_dead_id_idx ON jobs (id) WHERE status = 'dead';
CREATE INDEX jobs_dead_class_id_idx ON jobs (error_class, id) WHERE status = 'dead';
