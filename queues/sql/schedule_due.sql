-- scheduleDue: enabled schedules whose next run is due, locked for this
-- scheduler tick, with the database clock. SKIP LOCKED: a schedule being
-- edited (or ticked by a stale leader) waits for the next tick.
-- Locks: FOR UPDATE on the due rows. Index: schedules_due_idx.
SELECT name, spec, kind, queue, payload, next_run_at, clock_timestamp() AS now
FROM schedules
WHERE enabled AND next_run_at <= clock_timestamp()
ORDER BY next_run_at
LIMIT $1
FOR UPDATE SKIP LOCKED
