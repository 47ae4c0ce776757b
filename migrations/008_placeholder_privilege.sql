-- 008: placeholder on the privilege branch only, so that 010 loads (tern
-- refuses gaps). Delete it when merging: the real 008 comes from another branch.
SELECT 1;
