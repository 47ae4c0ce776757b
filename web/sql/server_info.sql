-- server_info: the version and role shown in the top bar. No locks.
SELECT current_setting('server_version'), pg_is_in_recovery()
