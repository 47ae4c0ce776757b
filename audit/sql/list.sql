-- List: audit events matching optional filters, newest first, keyset-paged
-- by id. Reads only; the actor, action, target and incident filters each
-- have an (x, id) index, so a filtered page walks one index backwards.
SELECT id, seq, at, actor, role, action, target, params, reason, preview, result,
       outcome, error, incident_id, prev_hash, hash, hash_alg
FROM audit_events
WHERE ($1 = '' OR actor = $1)
  AND ($2 = '' OR action = $2)
  AND ($3 = '' OR target = $3)
  AND ($4 = '' OR outcome = $4)
  AND ($5::bigint IS NULL OR incident_id = $5)
  AND ($6 = 0 OR id < $6)
ORDER BY id DESC
LIMIT $7
