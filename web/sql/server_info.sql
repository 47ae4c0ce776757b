-- server_info: the version and role shown in the top bar. No locks.
SELECT split_part(current_setting('server_version'), ' ', 1), pg_is_in_recovery()
