-- HistoryWritable: whether this session may record history (Recorder.Check):
-- the role it runs as, whether history_samples exists, whether the role may
-- read and insert into it (the recorder's two statements), and whether its
-- transactions are read-only (default_transaction_read_only for the role or
-- database). may_write is false, not NULL, when the table is missing. Reads
-- the catalogs only: no lock on history_samples, no index.
SELECT current_user::text AS role,
       to_regclass('history_samples') IS NOT NULL AS table_exists,
       coalesce(has_table_privilege(to_regclass('history_samples'), 'INSERT')
                AND has_table_privilege(to_regclass('history_samples'), 'SELECT'), false) AS may_write,
       current_setting('transaction_read_only') = 'on' AS read_only
