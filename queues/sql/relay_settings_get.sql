-- RelaySettingsGet: the fleet-wide relay settings (a single row). Every relay
-- reads it at least once per poll interval. Reads the primary key; no locks.
SELECT paused, batch_size, rate_per_second, updated_by, updated_at
FROM relay_settings
WHERE singleton
