-- QueueSettingsList: the settings of the queues in $1, plus how many live
-- engine processes (workers rows seen in the last $2 ms, not stopped) serve
-- each, for dividing a queue's rate among them, and whether the queue has
-- tenant limits (its claims then run fair and locked). Runs once per poll
-- interval per process. No locks; primary keys of queue_settings and
-- tenant_limits, seq scan of the small workers table.
SELECT q AS queue,
       coalesce(s.paused, false) AS paused, s.max_workers, s.rate_per_second,
       (SELECT count(*) FROM workers w
        WHERE q = ANY(w.queues) AND w.stopped_at IS NULL
          AND w.last_seen_at > clock_timestamp() - ($2::bigint * interval '1 millisecond')) AS live_workers,
       EXISTS (SELECT 1 FROM tenant_limits t WHERE t.queue = q) AS tenant_limited
FROM unnest($1::text[]) AS q
LEFT JOIN queue_settings s ON s.queue = q
