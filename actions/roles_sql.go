package actions

// rolesSQL is the least-privilege setup; see RolesSQL.
const rolesSQL = `-- Least-privilege roles for the incident console.
--
-- Two kinds of role: the one that owns the schema, and the ones the
-- console runs as. Run "console migrate up" as the owner (a role of your
-- own, for example console_owner, that owns the database or its schema),
-- then this script as a superuser (or a role with CREATEROLE that may grant
-- pg_monitor and pg_signal_backend), in the console's database. Run it again
-- after every "console migrate up": it grants on the tables that exist.
-- Re-running is safe. No role below is a superuser and none owns a table.
-- Set passwords with \password <role> in psql.
--
--   console_monitor   read-only: diagnostics (pg_monitor) and the console's tables
--   console_operator  + the changes the actions make, recording audit events,
--                       and pg_signal_backend for backend.cancel / backend.terminate
--   console_worker    login for "console worker": the engine (jobs, outbox
--                       relay, inbox, idempotency keys, scheduler, maintenance)
--   console_web       login for "console serve": operator + worker + the
--                       operator accounts, API tokens and sessions
--   console_readonly  login for people or tools that only look
--
-- pg_signal_backend cannot signal superuser backends: run the application
-- as non-superuser roles, or the console will be unable to cancel them.
-- audit_events gets INSERT only, and the runtime roles do not own it, so
-- they can neither rewrite history nor disable its append-only trigger; the
-- chain triggers and audit_chain_lock() are SECURITY DEFINER and move the
-- chain head themselves.

DO $roles$
DECLARE
    r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['console_monitor', 'console_operator'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', r);
        END IF;
    END LOOP;
    FOREACH r IN ARRAY ARRAY['console_worker', 'console_web', 'console_readonly'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
            EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', r);
        ELSE
            EXECUTE format('ALTER ROLE %I LOGIN', r);
        END IF;
    END LOOP;
    FOREACH r IN ARRAY ARRAY['console_monitor', 'console_operator', 'console_worker', 'console_web', 'console_readonly'] LOOP
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r AND rolsuper) THEN
            RAISE EXCEPTION 'role % is a superuser; the console must not run as one: ALTER ROLE % NOSUPERUSER', r, r;
        END IF;
        IF EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = 'public' AND tableowner = r) THEN
            RAISE EXCEPTION 'role % owns tables of this database; migrate as a separate owner role and give the tables to it (ALTER TABLE ... OWNER TO)', r;
        END IF;
    END LOOP;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO console_monitor, console_worker', current_database());
END
$roles$;

-- Everyone reads the schema version: every console process checks it at start.
GRANT USAGE ON SCHEMA public TO console_monitor, console_worker;
GRANT SELECT ON console_schema_version TO console_monitor, console_worker;

-- Monitoring: pg_stat_activity with every query text, pg_locks, replication
-- and WAL views, pg_stat_statements.
GRANT pg_monitor TO console_monitor;
GRANT SELECT ON jobs, jobs_archive, queue_settings, workers, outbox_events, relay_settings,
    consumer_inbox, idempotency_requests, schedules, maintenance_runs,
    incidents, incident_evidence, audit_events, audit_chain_head, dead_letter_counts,
    queue_job_counts, job_kind_runs TO console_monitor;
GRANT SELECT ON tenant_limits, tenant_rate_tokens TO console_monitor;

-- Operator actions: queue and relay settings, job and outbox state changes,
-- schedules, enqueueing scheduled runs, incidents and the audit trail.
GRANT console_monitor TO console_operator;
GRANT pg_signal_backend TO console_operator;
GRANT INSERT, UPDATE ON queue_settings, relay_settings, schedules TO console_operator;
GRANT INSERT, UPDATE, DELETE ON tenant_limits TO console_operator;
GRANT INSERT, UPDATE ON jobs, outbox_events TO console_operator;
GRANT UPDATE (stop_requested) ON maintenance_runs TO console_operator;
GRANT INSERT, UPDATE ON incidents TO console_operator;
GRANT INSERT ON incident_evidence, audit_events TO console_operator;
GRANT EXECUTE ON FUNCTION audit_chain_lock() TO console_operator;

-- Engine processes: claim, ack, archive and prune, the registry, the relay,
-- the inbox, idempotency keys and the scheduler; replica lag for the
-- maintenance kinds' pauses (pg_read_all_stats).
GRANT pg_read_all_stats TO console_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON jobs, jobs_archive, workers, outbox_events,
    consumer_inbox, idempotency_requests, maintenance_runs TO console_worker;
GRANT SELECT ON queue_settings, relay_settings, tenant_limits TO console_worker;
GRANT SELECT, INSERT, UPDATE ON tenant_rate_tokens TO console_worker;
GRANT SELECT, UPDATE ON schedules TO console_worker;

-- The console server: operator rights, the engine it runs (scheduler,
-- relay, idempotent API requests), its accounts and sessions.
GRANT console_operator, console_worker TO console_web;
GRANT SELECT, INSERT, UPDATE, DELETE ON operators, api_tokens, operator_sessions TO console_web;

GRANT console_monitor TO console_readonly;
`

// RolesSQL returns a SQL script that sets up least-privilege database roles
// for production, for a schema owned by a separate migration role:
// console_monitor (pg_monitor and read access, for diagnostics),
// console_operator (the actions' writes, recording audit events, and
// pg_signal_backend for backend.cancel and backend.terminate), and the login
// roles console_worker (console worker), console_web (console serve) and
// console_readonly. No role is a superuser or owns a table, and none may
// update or delete audit events. The script is idempotent; run it with psql
// as a superuser after every migration.
func RolesSQL() string { return rolesSQL }
