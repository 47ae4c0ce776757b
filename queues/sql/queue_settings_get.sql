-- QueueSettingsGet: one queue's operator settings, defaults when the queue
-- has no row. No locks; primary key.
SELECT $1::text AS queue,
       coalesce(s.paused, false) AS paused, s.max_workers, s.rate_per_second,
       s.updated_by, s.updated_at
FROM (SELECT 1) AS one
LEFT JOIN queue_settings s ON s.queue = $1
