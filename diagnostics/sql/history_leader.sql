-- HistoryLeader: whether this session may record the current sample. A
-- transaction-scoped advisory lock that is only tried, never waited for:
-- another console recording right now makes this false at once, and the
-- lock ends with the transaction. The second condition makes several
-- consoles with different sampling phases record once per interval, not
-- once each: a sample recorded within the last $1 seconds (from any
-- console) means this one is skipped. The lock is taken first, so the
-- check that follows sees the other console's committed row. Reads the
-- primary key of history_samples; no table locks beyond ACCESS SHARE.
SELECT pg_try_advisory_xact_lock(hashtext('console.history_samples'))
       AND NOT EXISTS (SELECT 1 FROM history_samples
                       WHERE sampled_at > clock_timestamp() - make_interval(secs => $1::float8)) AS leader
