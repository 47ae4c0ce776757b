-- maintenancePruneInbox: delete up to $2 inbox records processed more than
-- $1 ms ago. The retention must exceed every broker's redelivery and replay
-- window, or a late redelivery would be applied twice.
-- Locks: row locks on the old rows (SKIP LOCKED). Index:
-- consumer_inbox_processed_at_idx.
WITH picked AS (
    SELECT consumer_name, event_id
    FROM consumer_inbox
    WHERE processed_at < clock_timestamp() - ($1 * interval '1 millisecond')
    ORDER BY processed_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
)
DELETE FROM consumer_inbox AS c
USING picked
WHERE c.consumer_name = picked.consumer_name AND c.event_id = picked.event_id
