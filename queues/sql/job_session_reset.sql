-- JobSessionReset: gives a job's session back its connection-time
-- application_name before it returns to the pool. No locks.
RESET application_name
