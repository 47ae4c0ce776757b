-- DeadLetterTotals: how many jobs are dead and in how many (queue, error
-- class) groups ($1 = '' for every queue), exact, from dead_letter_counts:
-- one row per class, never the dead jobs themselves. No locks beyond ACCESS
-- SHARE.
SELECT coalesce(sum(dead), 0)::int8 AS dead, count(*) AS groups
FROM dead_letter_counts
WHERE $1::text = '' OR queue = $1
