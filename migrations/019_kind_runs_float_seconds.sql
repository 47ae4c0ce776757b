-- 019: a kind's run times are computed in double precision.
--
-- job_kind_runs_record (migration 017), the statement trigger that records
-- the run time of every job an ack finishes, took each one as
-- extract(epoch FROM finished_at - started_at)::float8. extract returns
-- numeric, and computing that numeric and casting it back, once per acked
-- job, cost about as much as the rest of the aggregate: 1,000 rows
-- aggregated in 0.9-1.3 ms with extract against 0.55 ms with date_part
-- (PostgreSQL 15, the same 1,000 rows). date_part('epoch', ...) returns
-- double precision directly, and for the difference of two timestamps (a
-- whole number of microseconds, no months or days) it is the same value:
-- the microseconds divided by a million, correctly rounded either way.
CREATE OR REPLACE FUNCTION job_kind_runs_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    kinds text[];
BEGIN
    WITH added AS (
        INSERT INTO job_kind_runs (kind, seconds)
        SELECT kind, (array_agg(date_part('epoch', finished_at - started_at)))[1:200]
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
