-- holder_write: the xmin holder's write: a row in a temporary table its
-- transaction creates (and drops at its end), which gives the transaction
-- an xid without touching any table of the load. Locks: its own table only.
CREATE TEMPORARY TABLE xmin_holder (n int) ON COMMIT DROP;
INSERT INTO xmin_holder VALUES (1)
