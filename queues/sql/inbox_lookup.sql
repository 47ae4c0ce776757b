-- InboxLookup: which consumers applied event $1, and when. Scans
-- consumer_inbox (its primary key leads with consumer_name, so this reads
-- every consumer's slice of the key); meant for one-off investigations.
SELECT consumer_name, event_id, processed_at
FROM consumer_inbox
WHERE event_id = $1
ORDER BY processed_at
