-- RelaySettingsSetTx: replace the fleet-wide relay settings (NULL batch size
-- or rate = the relays' own configuration) and wake the relays so a resume
-- takes effect at once.
-- Locks: row lock on the single relay_settings row until the caller commits.
WITH upd AS (
    UPDATE relay_settings
    SET paused = $1, batch_size = $2, rate_per_second = $3, updated_by = $4,
        updated_at = clock_timestamp()
    WHERE singleton
    RETURNING paused, batch_size, rate_per_second, updated_by, updated_at
)
SELECT upd.* FROM upd, (SELECT pg_notify('queues_outbox', '')) AS n
