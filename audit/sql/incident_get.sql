-- IncidentGet: one incident by primary key. Reads only.
SELECT id, title, status, impact, slo, window_start, window_end, opened_by, opened_at,
       closed_by, closed_at, summary
FROM incidents
WHERE id = $1
