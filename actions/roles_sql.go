package actions

import "strings"

// A tableGrant is what each role may do on a group of tables: an empty field
// grants nothing. Monitor's rights reach console_readonly, console_operator
// and console_web, Operator's and Worker's reach console_web (see the
// memberships in rolesHeader and rolesFooter). Why is the script's comment.
type tableGrant struct {
	Tables                         []string
	Why                            string
	Monitor, Operator, Worker, Web string
}

// tableGrants is the one place that says which role may do what on each
// table of the schema; RolesSQL grants from it. Every table the migrations
// create has an entry, even one that grants nothing (a test fails when one
// is missing). Sequences need no grant: every id is an identity column, whose
// sequence PostgreSQL advances without checking privileges on it.
var tableGrants = []tableGrant{
	{Tables: []string{"console_schema_version"},
		Why:     "Every console process checks the schema version at start.",
		Monitor: "SELECT", Worker: "SELECT"},
	{Tables: []string{"jobs", "outbox_events"},
		Why: "Jobs and outbox events: the engine claims, acks, archives and prunes them,\n" +
			"and relays the events; operators requeue, retry, cancel and enqueue.",
		Monitor: "SELECT", Operator: "INSERT, UPDATE", Worker: "SELECT, INSERT, UPDATE, DELETE"},
	{Tables: []string{"jobs_archive", "workers", "consumer_inbox", "idempotency_requests"},
		Why: "The engine's own tables: the archive_jobs kind, the worker registry, the\n" +
			"inbox and idempotency keys (the console's API requests use them too).",
		Monitor: "SELECT", Worker: "SELECT, INSERT, UPDATE, DELETE"},
	{Tables: []string{"maintenance_runs"},
		Why:     "Maintenance runs: the engine records them; an operator may ask one to stop.",
		Monitor: "SELECT", Operator: "UPDATE (stop_requested)", Worker: "SELECT, INSERT, UPDATE, DELETE"},
	{Tables: []string{"queue_settings", "relay_settings"},
		Why:     "Queue and relay settings: operators change them, the engine follows them.",
		Monitor: "SELECT", Operator: "INSERT, UPDATE", Worker: "SELECT"},
	{Tables: []string{"schedules"},
		Why:     "Schedules: operators edit them, the scheduler advances them.",
		Monitor: "SELECT", Operator: "INSERT, UPDATE", Worker: "SELECT, UPDATE"},
	{Tables: []string{"tenant_limits"},
		Why:     "Tenant limits: operators set and remove them, fair claims read them.",
		Monitor: "SELECT", Operator: "INSERT, UPDATE, DELETE", Worker: "SELECT"},
	{Tables: []string{"tenant_rate_tokens"},
		Why:     "Tenant rate buckets, refilled and spent by fair claims.",
		Monitor: "SELECT", Worker: "SELECT, INSERT, UPDATE"},
	{Tables: []string{"incidents"},
		Why:     "Incidents: operators and Alertmanager notifications open and close them.",
		Monitor: "SELECT", Operator: "INSERT, UPDATE"},
	{Tables: []string{"incident_evidence", "audit_events"},
		Why: "Evidence and the audit trail are append-only for every runtime role: they\n" +
			"can neither rewrite history nor disable its append-only trigger.",
		Monitor: "SELECT", Operator: "INSERT"},
	{Tables: []string{"audit_chain_head", "dead_letter_counts", "queue_job_counts", "job_kind_runs"},
		Why: "Kept by the owner's SECURITY DEFINER functions and triggers (the audit\n" +
			"chain's head, dead-letter and job counts, each kind's run times): read only.",
		Monitor: "SELECT"},
	{Tables: []string{"dead_letter_count_changes"},
		Why: "dead_letter_count_changes is the counting triggers' scratch table, written\n" +
			"and read only by the owner's SECURITY DEFINER functions: no grant."},
	{Tables: []string{"operators", "api_tokens", "operator_sessions"},
		Why: "Operator accounts, API tokens and sessions: password and token hashes, for\n" +
			"the console server only.",
		Web: "SELECT, INSERT, UPDATE, DELETE"},
	{Tables: []string{"history_samples"},
		Why: "The flight recorder: console serve records a sample every interval and\n" +
			"reads them back (/history, ?window=); the prune_history kind deletes old ones.",
		Monitor: "SELECT", Worker: "SELECT, DELETE", Web: "INSERT"},
	{Tables: []string{"alert_notifications"},
		Why: "Alertmanager notifications already acted on, kept by the console server's\n" +
			"webhook (POST /api/v1/alerts) so a repeat opens no second incident.",
		Monitor: "SELECT", Web: "INSERT, UPDATE"},
	{Tables: []string{"lock_episodes", "lock_episode_participants"},
		Why: "Lock episodes: console serve records every lock wait it sees, closing each\n" +
			"when it ends; the prune_history kind deletes old ones.",
		Monitor: "SELECT", Worker: "SELECT, DELETE", Web: "INSERT, UPDATE"},
}

// rolesHeader creates the roles and grants what does not depend on the
// tables.
const rolesHeader = `-- Least-privilege roles for the incident console.
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
--   console_web       login for "console serve": operator + worker (serve runs
--                       the scheduler, the relay and idempotent API requests) +
--                       the operator accounts, API tokens and sessions, the
--                       history it records and Alertmanager's notifications
--   console_readonly  login for people or tools that only look
--
-- pg_signal_backend cannot signal superuser backends: run the application
-- as non-superuser roles, or the console will be unable to cancel them.
-- audit_events gets INSERT only, and the runtime roles do not own it, so
-- they can neither rewrite history nor disable its append-only trigger; the
-- chain triggers and audit_chain_lock() are SECURITY DEFINER and move the
-- chain head themselves.
--
-- On PostgreSQL 16 and later console_web and console_readonly may use the
-- connection slots kept by reserved_connections, so the console can still
-- connect when the application has taken every other one. Set it, for
-- example reserved_connections = 3 in postgresql.conf (a restart applies it).

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
    -- pg_use_reserved_connections exists from PostgreSQL 16 on.
    IF current_setting('server_version_num')::int >= 160000 THEN
        EXECUTE 'GRANT pg_use_reserved_connections TO console_web, console_readonly';
    END IF;
END
$roles$;

GRANT USAGE ON SCHEMA public TO console_monitor, console_worker;

-- Monitoring: pg_stat_activity with every query text, pg_locks, replication
-- and WAL views, pg_stat_statements.
GRANT pg_monitor TO console_monitor;
-- Operator actions, and pg_signal_backend for backend.cancel / terminate.
GRANT console_monitor TO console_operator;
GRANT pg_signal_backend TO console_operator;
GRANT EXECUTE ON FUNCTION audit_chain_lock() TO console_operator;
-- Engine processes: replica lag for the maintenance kinds' pauses.
GRANT pg_read_all_stats TO console_worker;
-- The console server: operator rights and the engine it runs.
GRANT console_operator, console_worker TO console_web;
GRANT console_monitor TO console_readonly;
`

// riverGrants grants on River's tables (github.com/riverqueue/river) when
// the database holds them, as the search path resolves them: the console
// reads River's queues, jobs and leader, and its River actions change jobs
// and queues through River's own client, whose statements update river_job
// (JobRetry, JobCancel) and river_queue (QueuePause, QueueResume). No SQL
// of the console's own writes them.
const riverGrants = `
-- River (github.com/riverqueue/river), when its tables are in this database
-- (run this script again after River's own migrations): the console reads
-- River's jobs, queues, leader and migration version for its queue pages
-- and findings; operators retry and cancel jobs and pause and resume queues
-- through River's client, which updates river_job and river_queue.
DO $river$
BEGIN
    IF to_regclass('river_job') IS NOT NULL AND to_regclass('river_queue') IS NOT NULL
       AND to_regclass('river_leader') IS NOT NULL AND to_regclass('river_migration') IS NOT NULL THEN
        GRANT SELECT ON river_job, river_queue, river_leader, river_migration TO console_monitor;
        GRANT UPDATE ON river_job, river_queue TO console_operator;
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO console_monitor',
            (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass('river_job')));
    END IF;
END
$river$;
`

// rolesSQL is the script RolesSQL returns, built once from tableGrants.
var rolesSQL = buildRolesSQL()

func buildRolesSQL() string {
	var b strings.Builder
	b.WriteString(rolesHeader)
	for _, g := range tableGrants {
		b.WriteString("\n-- ")
		b.WriteString(strings.ReplaceAll(g.Why, "\n", "\n-- "))
		b.WriteString("\n")
		for _, rg := range []struct{ role, rights string }{
			{"console_monitor", g.Monitor}, {"console_operator", g.Operator}, {"console_worker", g.Worker}, {"console_web", g.Web},
		} {
			if rg.rights != "" {
				b.WriteString("GRANT " + rg.rights + " ON " + strings.Join(g.Tables, ", ") + " TO " + rg.role + ";\n")
			}
		}
	}
	b.WriteString(riverGrants)
	return b.String()
}

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

// RiverGrantsSQL is the part of RolesSQL that grants on River's tables: a
// DBA who migrated River after running RolesSQL may run it alone (the
// roles must exist).
func RiverGrantsSQL() string { return riverGrants }
