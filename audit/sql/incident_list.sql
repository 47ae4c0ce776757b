-- IncidentList: incidents newest first, optionally one status. Reads only;
-- the table is small (one row per declared incident), so a scan is fine.
SELECT id, title, status, impact, slo, window_start, window_end, opened_by, opened_at,
       closed_by, closed_at, summary
FROM incidents
WHERE ($1 = '' OR status = $1)
ORDER BY id DESC
LIMIT $2
