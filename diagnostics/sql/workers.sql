-- Workers: engine processes registered in the workers table with their
-- heartbeat age and in-flight jobs; alive means not stopped and heartbeated
-- within $1 seconds (runbook step 7). recent_errors are the engine errors
-- the worker reported (newest last) that are less than a minute old. Small
-- table; takes ACCESS SHARE on workers.
SELECT id,
       host,
       pid,
       queues,
       concurrency,
       in_flight,
       version,
       started_at,
       last_seen_at,
       stopped_at,
       extract(epoch FROM clock_timestamp() - last_seen_at)::float8              AS last_seen_seconds,
       (stopped_at IS NULL
        AND last_seen_at > clock_timestamp() - make_interval(secs => $1))        AS alive,
       (SELECT coalesce(jsonb_agg(e ORDER BY e ->> 'at'), '[]'::jsonb)
        FROM jsonb_array_elements(recent_errors) AS e
        WHERE (e ->> 'at')::timestamptz > clock_timestamp() - interval '1 minute') AS recent_errors
FROM workers
ORDER BY last_seen_at DESC
LIMIT 1000
