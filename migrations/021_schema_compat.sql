-- 021: the schema says which consoles still run against it.
-- compat: expand
--
-- A console runs against a range of schema versions (migrations.Compatible):
-- from the oldest its SQL works with up to the newest migration it carries,
-- and beyond that as long as every newer migration only added what it never
-- touches (an expand migration). A console cannot read the header of a
-- migration it does not carry, so each contract migration from this one on
-- writes its number and file name here, in the same transaction as the
-- version: a console that knows fewer migrations than contract_version
-- refuses the schema and names the migration; one that knows at least as
-- many runs against it.
--
-- Every migration before this one counts as a contract: the consoles that
-- carry them accept only their own exact version. Hence 20 to begin with.
--
-- Locks: ACCESS EXCLUSIVE on console_schema_version for a catalog-only
-- change (two columns with constant defaults); every console reads it once
-- at start and the readiness probe reads it, neither inside a longer
-- transaction.
ALTER TABLE console_schema_version
    ADD COLUMN contract_version integer NOT NULL DEFAULT 20,
    ADD COLUMN contract_name    text    NOT NULL DEFAULT '020_lock_episodes.sql';
