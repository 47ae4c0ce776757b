-- QueueSettingsSet: writes one queue's operator settings (upsert). Every
-- engine process obeys them within one poll interval; JobClaim reads paused
-- and max_workers on every claim. Row lock on the settings row.
INSERT INTO queue_settings AS s (queue, paused, max_workers, rate_per_second, updated_by, updated_at)
VALUES ($1, $2, $3, $4, $5, clock_timestamp())
ON CONFLICT (queue) DO UPDATE
SET paused = excluded.paused,
    max_workers = excluded.max_workers,
    rate_per_second = excluded.rate_per_second,
    updated_by = excluded.updated_by,
    updated_at = excluded.updated_at
RETURNING queue, paused, max_workers, rate_per_second, updated_by, updated_at
