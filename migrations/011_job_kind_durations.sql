-- 010: the usual run time of each job kind.
--
-- A job that runs far longer than its kind usually does is hidden from the
-- expired-lease check while its worker keeps renewing the lease. Diagnostics
-- compares each running job with the recent finished jobs of its kind: the
-- latest 200 done jobs of one kind are one descent of this index. Partial, so
-- only finished successes enter it (an ack moves a row into it; ready and
-- running rows never do).
CREATE INDEX jobs_done_kind_idx
    ON jobs (kind, finished_at DESC)
    WHERE status = 'done';
