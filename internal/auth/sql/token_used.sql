-- TokenUsed: record when tokens were last used, for a batch of them at
-- once: $1 their ids, $2 the matching times. A time never moves
-- last_used_at back. Row locks on those api_tokens rows (primary key).
UPDATE api_tokens AS t
SET last_used_at = u.at
FROM unnest($1::int8[], $2::timestamptz[]) AS u(id, at)
WHERE t.id = u.id
  AND (t.last_used_at IS NULL OR t.last_used_at < u.at)
