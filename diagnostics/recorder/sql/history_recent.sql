-- HistoryRecent: whether a sample was recorded (by any console) within the
-- last $1 seconds. Run after HistoryLock succeeded, in a READ COMMITTED
-- transaction, so its snapshot sees every sample committed before the lock
-- was granted. This makes several consoles with different sampling phases
-- record once per interval, not once each. Reads the primary key of
-- history_samples under ACCESS SHARE.
SELECT EXISTS (SELECT 1 FROM history_samples
               WHERE sampled_at > clock_timestamp() - make_interval(secs => $1::float8))
