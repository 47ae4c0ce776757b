package actions

// rolesSQL is the least-privilege setup; see RolesSQL.
const rolesSQL = `-- Least-privilege roles for the incident console.
-- Run once per database, as the database owner or a superuser, after
-- "console migrate". No role below is a superuser; set passwords with
-- \password <role> in psql. Re-running is safe.
--
--   console_monitor   read-only: diagnostics (pg_monitor) and the console's tables
--   console_operator  + the changes the actions make, and pg_signal_backend
--                       for backend.cancel / backend.terminate
--   console_worker    what an engine process (console worker) needs
--   console_web       the console's login role (serve): operator + accounts
--   console_readonly  a login for people or tools that only look
--
-- pg_signal_backend cannot signal superuser backends: run the application
-- as non-superuser roles, or the console will be unable to cancel them.
-- audit_events gets INSERT only: the hash-chain trigger is SECURITY DEFINER
-- and moves audit_chain_head itself, so the console can neither rewrite
-- history nor move the chain head.

DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['console_monitor', 'console_operator', 'console_worker'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', r);
        END IF;
    END LOOP;
    FOREACH r IN ARRAY ARRAY['console_web', 'console_readonly'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', r);
        END IF;
    END LOOP;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO console_monitor, console_worker', current_database());
END
$roles$;

-- Monitoring: pg_stat_activity with every query text, pg_locks, replication
-- and WAL views, pg_stat_statements.
GRANT pg_monitor TO console_monitor;
GRANT USAGE ON SCHEMA public TO console_monitor, console_worker;
GRANT SELECT ON jobs, jobs_archive, queue_settings, workers, outbox_events, relay_settings,
    consumer_inbox, idempotency_requests, schedules, maintenance_runs,
    incidents, incident_evidence, audit_events, audit_chain_head TO console_monitor;

-- Operator actions: queue and relay settings, job and outbox state changes,
-- schedules, enqueueing scheduled runs, incidents and the audit trail.
GRANT console_monitor TO console_operator;
GRANT pg_signal_backend TO console_operator;
GRANT INSERT, UPDATE ON queue_settings, relay_settings, schedules TO console_operator;
GRANT INSERT, UPDATE ON jobs, outbox_events TO console_operator;
GRANT UPDATE (stop_requested) ON maintenance_runs TO console_operator;
GRANT INSERT, UPDATE ON incidents TO console_operator;
GRANT INSERT ON incident_evidence, audit_events TO console_operator;

-- Engine processes: claim, ack, archive and prune, the registry, the relay,
-- the inbox, idempotency keys and the scheduler.
GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, jobs_archive, workers, outbox_events,
    consumer_inbox, idempotency_requests, maintenance_runs TO console_worker;
GRANT SELECT ON queue_settings, relay_settings TO console_worker;
GRANT SELECT, UPDATE ON schedules TO console_worker;

-- The console server: operator rights plus its accounts and sessions.
GRANT console_operator TO console_web;
GRANT SELECT, INSERT, UPDATE, DELETE ON operators, api_tokens, operator_sessions TO console_web;

GRANT console_monitor TO console_readonly;
`

// RolesSQL returns a SQL script that sets up least-privilege database roles
// for production: console_monitor (pg_monitor and read access, for
// diagnostics), console_operator (the actions' writes and pg_signal_backend
// for backend.cancel and backend.terminate), console_worker (engine
// processes), and the login roles console_web and console_readonly. No role
// is a superuser, and none may update or delete audit events. The script is
// idempotent; run it with psql as the database owner after migrating.
func RolesSQL() string { return rolesSQL }
