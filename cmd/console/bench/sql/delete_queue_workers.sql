-- delete_queue_workers: removes the workers rows of a bench phase's
-- clients. $1 queue. Row locks on them.
DELETE FROM workers WHERE $1 = ANY (queues)
