-- OperatorCount: how many enabled accounts exist (first-run setup).
SELECT count(*) FROM operators WHERE NOT disabled
