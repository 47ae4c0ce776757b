package testdb

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ConsoleGrants is every right each console role (and PUBLIC) holds in a
// database migrated by OwnerRole once `console roles sql` has run, on a
// server of version (server_version_num): one line per role attribute,
// membership, and object (database, schema, table, column, sequence,
// function), privileges in PostgreSQL's order. It is the list a reviewer
// checks: a right granted beyond it, or missing from it, fails the tests
// that compare it with Grants.
func ConsoleGrants(version int) map[string][]string {
	all := "SELECT, INSERT, UPDATE, DELETE ON "
	g := map[string][]string{
		"public": {
			"CONNECT, TEMPORARY ON DATABASE",
			"USAGE ON SCHEMA public",
			"EXECUTE ON FUNCTION audit_event_canonical(audit_events)",
			"EXECUTE ON FUNCTION audit_events_append_only()",
			"EXECUTE ON FUNCTION audit_events_chain()",
			"EXECUTE ON FUNCTION dead_letter_count_clear()",
			"EXECUTE ON FUNCTION dead_letter_count_fold()",
			"EXECUTE ON FUNCTION dead_letter_count_note()",
			"EXECUTE ON FUNCTION job_kind_runs_record()",
			"EXECUTE ON FUNCTION queue_job_count_change()",
			"EXECUTE ON FUNCTION queue_job_count_clear()",
		},
		"console_monitor": {
			"CONNECT ON DATABASE",
			"USAGE ON SCHEMA public",
			"MEMBER OF pg_monitor",
			"SELECT ON alert_notifications",
			"SELECT ON audit_chain_head",
			"SELECT ON audit_events",
			"SELECT ON consumer_inbox",
			"SELECT ON console_schema_version",
			"SELECT ON dead_letter_counts",
			"SELECT ON history_samples",
			"SELECT ON idempotency_requests",
			"SELECT ON incident_evidence",
			"SELECT ON incidents",
			"SELECT ON job_kind_runs",
			"SELECT ON jobs",
			"SELECT ON jobs_archive",
			"SELECT ON lock_episode_participants",
			"SELECT ON lock_episodes",
			"SELECT ON maintenance_runs",
			"SELECT ON outbox_events",
			"SELECT ON queue_job_counts",
			"SELECT ON queue_settings",
			"SELECT ON relay_settings",
			"SELECT ON schedules",
			"SELECT ON tenant_limits",
			"SELECT ON tenant_rate_tokens",
			"SELECT ON workers",
		},
		"console_operator": {
			"MEMBER OF console_monitor",
			"MEMBER OF pg_signal_backend",
			"EXECUTE ON FUNCTION audit_chain_lock()",
			"INSERT ON audit_events",
			"INSERT ON incident_evidence",
			"INSERT, UPDATE ON incidents",
			"INSERT, UPDATE ON jobs",
			"INSERT, UPDATE ON outbox_events",
			"INSERT, UPDATE ON queue_settings",
			"INSERT, UPDATE ON relay_settings",
			"INSERT, UPDATE ON schedules",
			"INSERT, UPDATE, DELETE ON tenant_limits",
			"UPDATE (stop_requested) ON maintenance_runs",
		},
		"console_worker": {
			"LOGIN",
			"CONNECT ON DATABASE",
			"USAGE ON SCHEMA public",
			"MEMBER OF pg_read_all_stats",
			"SELECT ON console_schema_version",
			"SELECT ON queue_settings",
			"SELECT ON relay_settings",
			"SELECT ON tenant_limits",
			"SELECT, DELETE ON history_samples",
			"SELECT, DELETE ON lock_episode_participants",
			"SELECT, DELETE ON lock_episodes",
			"SELECT, INSERT, UPDATE ON tenant_rate_tokens",
			"SELECT, UPDATE ON schedules",
			all + "consumer_inbox",
			all + "idempotency_requests",
			all + "jobs",
			all + "jobs_archive",
			all + "maintenance_runs",
			all + "outbox_events",
			all + "workers",
		},
		"console_web": {
			"LOGIN",
			"MEMBER OF console_operator",
			"MEMBER OF console_worker",
			"INSERT ON history_samples",
			"INSERT, UPDATE ON alert_notifications",
			"INSERT, UPDATE ON lock_episode_participants",
			"INSERT, UPDATE ON lock_episodes",
			all + "api_tokens",
			all + "operator_sessions",
			all + "operators",
		},
		"console_readonly": {
			"LOGIN",
			"MEMBER OF console_monitor",
		},
	}
	if version >= 160000 {
		g["console_web"] = append(g["console_web"], "MEMBER OF pg_use_reserved_connections")
		g["console_readonly"] = append(g["console_readonly"], "MEMBER OF pg_use_reserved_connections")
	}
	for _, lines := range g {
		slices.Sort(lines)
	}
	return g
}

// grantsSQL reads every right the named roles (and PUBLIC, as "public")
// hold directly in the current database, in the line format of
// ConsoleGrants. $1 is the roles' names.
const grantsSQL = `
WITH privs (p, n) AS (
    SELECT * FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER',
        'MAINTAIN', 'USAGE', 'CREATE', 'CONNECT', 'TEMPORARY', 'EXECUTE']) WITH ORDINALITY
), grantees AS (
    SELECT oid, rolname FROM pg_roles WHERE rolname = ANY ($1)
    UNION ALL SELECT 0, 'public'
), acls (grantee, privilege_type, object) AS (
    SELECT a.grantee, a.privilege_type, 'ON DATABASE'
    FROM pg_database d, aclexplode(coalesce(d.datacl, acldefault('d'::"char", d.datdba))) a
    WHERE d.datname = current_database()
    UNION ALL
    SELECT a.grantee, a.privilege_type, 'ON SCHEMA ' || n.nspname
    FROM pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n'::"char", n.nspowner))) a
    WHERE n.nspname = 'public'
    UNION ALL
    SELECT a.grantee, a.privilege_type, 'ON ' || c.relname
    FROM pg_class c, aclexplode(coalesce(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a
    WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
      AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
    UNION ALL
    SELECT a.grantee, a.privilege_type || ' (' || att.attname || ')', 'ON ' || c.relname
    FROM pg_class c JOIN pg_attribute att ON att.attrelid = c.oid, aclexplode(att.attacl) a
    WHERE c.relnamespace = 'public'::regnamespace AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
    UNION ALL
    SELECT a.grantee, a.privilege_type, 'ON FUNCTION ' || p.oid::regprocedure::text
    FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f'::"char", p.proowner))) a
    WHERE p.pronamespace = 'public'::regnamespace AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = p.oid AND e.deptype = 'e')
)
SELECT g.rolname, string_agg(a.privilege_type, ', ' ORDER BY coalesce(pr.n, 99)) || ' ' || a.object
FROM acls a JOIN grantees g ON g.oid = a.grantee LEFT JOIN privs pr ON pr.p = a.privilege_type
GROUP BY g.rolname, a.object
UNION ALL
SELECT DISTINCT m.rolname, 'MEMBER OF ' || r.rolname
FROM pg_auth_members am JOIN pg_roles m ON m.oid = am.member JOIN pg_roles r ON r.oid = am.roleid
WHERE m.rolname = ANY ($1)
UNION ALL
SELECT r.rolname, attr
FROM pg_roles r, LATERAL (VALUES ('LOGIN', r.rolcanlogin), ('SUPERUSER', r.rolsuper), ('CREATEDB', r.rolcreatedb),
    ('CREATEROLE', r.rolcreaterole), ('REPLICATION', r.rolreplication), ('BYPASSRLS', r.rolbypassrls)) AS v (attr, has)
WHERE r.rolname = ANY ($1) AND v.has`

// Grants reads back every right held in the database at dbURL (a superuser's
// URL) by the console's roles (every role named console_*, except
// OwnerRole) and by PUBLIC, directly: grants on the database, the public
// schema, its tables, columns, sequences and functions (not those of
// extensions such as pg_stat_statements, which the extension owns), role memberships
// and role attributes, in the line format of ConsoleGrants.
func Grants(t testing.TB, dbURL string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to read grants: %v", err)
	}
	defer conn.Close(ctx)
	var roles []string
	rows, _ := conn.Query(ctx, `SELECT rolname FROM pg_roles WHERE rolname LIKE 'console\_%' AND rolname <> $1`, OwnerRole)
	if roles, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatalf("list the console's roles: %v", err)
	}
	got := map[string][]string{}
	rows, _ = conn.Query(ctx, grantsSQL, roles)
	var role, line string
	if _, err := pgx.ForEachRow(rows, []any{&role, &line}, func() error {
		got[role] = append(got[role], line)
		return nil
	}); err != nil {
		t.Fatalf("read grants: %v", err)
	}
	for _, lines := range got {
		slices.Sort(lines)
	}
	return got
}

// EffectiveTableGrants lists, for each login role of grants (a ConsoleGrants
// list), the table privileges it holds directly, through PUBLIC or through
// the memberships among the roles of grants, as "SELECT ON jobs" lines, one
// privilege a line.
func EffectiveTableGrants(grants map[string][]string) map[string][]string {
	out := map[string][]string{}
	for role, lines := range grants {
		if !slices.Contains(lines, "LOGIN") {
			continue
		}
		seen := map[string]bool{}
		var walk func(r string)
		walk = func(r string) {
			if seen[r] {
				return
			}
			seen[r] = true
			for _, l := range grants[r] {
				if m, ok := strings.CutPrefix(l, "MEMBER OF "); ok {
					walk(m)
				}
			}
		}
		walk(role)
		walk("public")
		var eff []string
		for r := range seen {
			for _, l := range grants[r] {
				privs, object, ok := strings.Cut(l, " ON ")
				if !ok || strings.HasPrefix(object, "DATABASE") || strings.HasPrefix(object, "SCHEMA ") ||
					strings.HasPrefix(object, "FUNCTION ") || strings.Contains(privs, "(") {
					continue
				}
				for p := range strings.SplitSeq(privs, ", ") {
					eff = append(eff, p+" ON "+object)
				}
			}
		}
		slices.Sort(eff)
		out[role] = slices.Compact(eff)
	}
	return out
}

// HeldTableGrants asks the server which table privileges each login role
// of grants holds (has_table_privilege, so through every membership, PUBLIC
// and predefined roles too), on every table, view and sequence of the
// public schema, in the line format of EffectiveTableGrants.
func HeldTableGrants(t testing.TB, dbURL string, grants map[string][]string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to read grants: %v", err)
	}
	defer conn.Close(ctx)
	out := map[string][]string{}
	for role, lines := range grants {
		if !slices.Contains(lines, "LOGIN") {
			continue
		}
		rows, _ := conn.Query(ctx, `
			SELECT p || ' ON ' || c.relname
			FROM pg_class c, unnest(CASE WHEN c.relkind = 'S' THEN ARRAY['USAGE', 'SELECT', 'UPDATE']
			    ELSE ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']
			        || CASE WHEN current_setting('server_version_num')::int >= 170000 THEN ARRAY['MAINTAIN'] ELSE '{}' END
			    END) AS p
			WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
			  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
			  AND CASE WHEN c.relkind = 'S' THEN has_sequence_privilege($1, c.oid, p) ELSE has_table_privilege($1, c.oid, p) END
			ORDER BY 1`, role)
		held, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("read %s's table privileges: %v", role, err)
		}
		slices.Sort(held)
		out[role] = held
	}
	return out
}

// ConsoleGrantsDiff compares the rights held in the database at dbURL (a
// superuser's URL) with ConsoleGrants, directly and as has_table_privilege
// sees them, and returns one sentence per difference ("console_worker holds
// SELECT ON operators, which ConsoleGrants does not list"); none when they
// match.
func ConsoleGrantsDiff(t testing.TB, dbURL string) []string {
	t.Helper()
	var version int
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to read the server version: %v", err)
	}
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version)
	conn.Close(ctx)
	if err != nil {
		t.Fatalf("read the server version: %v", err)
	}
	want := ConsoleGrants(version)
	diff := grantsDiff("directly", want, Grants(t, dbURL))
	return append(diff, grantsDiff("in effect", EffectiveTableGrants(want), HeldTableGrants(t, dbURL, want))...)
}

func grantsDiff(how string, want, got map[string][]string) []string {
	var out []string
	roles := map[string]bool{}
	for r := range want {
		roles[r] = true
	}
	for r := range got {
		roles[r] = true
	}
	for _, r := range slices.Sorted(maps.Keys(roles)) {
		for _, l := range got[r] {
			if !slices.Contains(want[r], l) {
				out = append(out, r+" holds "+l+" ("+how+"), which ConsoleGrants does not list")
			}
		}
		for _, l := range want[r] {
			if !slices.Contains(got[r], l) {
				out = append(out, r+" lacks "+l+" ("+how+"), which ConsoleGrants lists")
			}
		}
	}
	return out
}
