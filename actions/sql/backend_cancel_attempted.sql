-- backendCancelAttempted: whether a backend.cancel of this same backend (pid
-- and backend_start, as the cancel's preview fingerprinted it) succeeded in
-- the last $3 seconds; backend.terminate requires one unless overridden.
-- Reads audit_events through audit_events_target_idx.
SELECT EXISTS (
    SELECT 1
    FROM audit_events
    WHERE target = 'backend:' || ($1::bigint)::text
      AND action = 'backend.cancel'
      AND outcome = 'succeeded'
      AND (preview -> 'target' ->> 'backend_start')::timestamptz = $2::timestamptz
      AND at > clock_timestamp() - make_interval(secs => $3)
)
