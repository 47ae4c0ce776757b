-- JobNotify: one wake-up hint per queue after a COPY enqueue (COPY cannot
-- notify by itself). Listeners treat it as a hint; polling is the truth.
SELECT pg_notify('console_jobs', q) FROM unnest($1::text[]) AS q
