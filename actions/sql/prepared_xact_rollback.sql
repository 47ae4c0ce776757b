-- preparedXactRollback: ROLLBACK PREPARED of the guarded gid, which the code
-- appends as a quoted string literal (the command takes no parameters). It
-- cannot run inside a transaction block, so it runs on its own connection
-- and takes effect at once; it releases every lock the prepared
-- transaction holds and discards its changes. Only its owner or a
-- superuser may run it, connected to its database.
ROLLBACK PREPARED
