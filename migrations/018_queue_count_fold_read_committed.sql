-- 018: the queue counters' fold runs only under READ COMMITTED.
--
-- About one statement on jobs in 64 folds queue_job_counts (migration 015):
-- it deletes the rows it sees and inserts their sums. Run by an enqueue
-- inside the caller's REPEATABLE READ or SERIALIZABLE transaction, whose
-- snapshot may predate another fold's commit, it tries to delete rows that
-- fold already deleted, and the caller's transaction fails with a
-- serialization error it did nothing to cause. The fold is only
-- housekeeping (the sums are the same before and after), so under those
-- isolation levels it now leaves the rows to the next READ COMMITTED
-- statement.
CREATE OR REPLACE FUNCTION queue_job_count_compact() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed'
       OR NOT pg_try_advisory_xact_lock(7303, 0) THEN
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
