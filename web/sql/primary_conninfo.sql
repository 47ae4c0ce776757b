-- primaryConninfo: a standby's primary_conninfo, to say where its primary
-- is. pg_settings leaves the row out for a role that may not read it (it
-- can hold a password), so the answer is then NULL, coalesced to ''. No
-- locks.
SELECT coalesce((SELECT setting FROM pg_settings WHERE name = 'primary_conninfo'), '')
