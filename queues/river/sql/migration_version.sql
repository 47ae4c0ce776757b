-- MigrationVersion: the newest River migration applied to the main line
-- (0 when none). Runs only once Detect found river_migration. Reads the
-- few rows of river_migration; no locks. River migration 5 added the line
-- column; every schema the console reads (MinVersion) has it.
SELECT coalesce(max(version), 0)::int AS version
FROM river_migration
WHERE line = 'main'
