-- outboxMarkAccepted: record that the broker accepted these events (ids $2,
-- generations $3) for relay $1, before the publish is marked. An event with
-- accepted_at set that is not published is the countable "published, mark
-- failed" window; publish_count > 1 says it was republished.
-- Locks: row locks on the given ids (primary key), fenced by owner and
-- generation so a relay whose lease was taken over changes nothing.
-- Plan: primary key probes; the arrays are read through scalar subqueries so
-- that the planner cannot size the batch (see job_ack_many.sql).
UPDATE outbox_events AS e
SET accepted_at = coalesce(e.accepted_at, clock_timestamp()),
    publish_count = e.publish_count + 1
FROM unnest((SELECT $2::bigint[]), (SELECT $3::bigint[])) AS m(id, generation)
WHERE e.id = m.id
  AND e.state = 'inflight'
  AND e.lease_owner = $1
  AND e.lease_generation = m.generation
RETURNING e.id
