-- RelaySettingsLockTx: locks the single relay_settings row until the
-- transaction ends, so two operators changing the relay apply their
-- changes one after the other instead of each writing back what it read
-- before the other committed. Locks: row lock on relay_settings.
SELECT count(*) FROM (SELECT 1 FROM relay_settings WHERE singleton FOR UPDATE) AS locked
