-- HistoryInsert: record one sample's evidence document. $3 is the document
-- (jsonb); bytes is its jsonb size before TOAST compression (an upper
-- bound of its size on disk), kept so the size cap is enforced without
-- reading the documents. Locks: ROW EXCLUSIVE on
-- history_samples only, which no application statement touches.
INSERT INTO history_samples (sampled_at, recorded_by, bytes, doc)
VALUES ($1, $2, pg_column_size($3::jsonb), $3::jsonb)
ON CONFLICT (sampled_at) DO NOTHING
