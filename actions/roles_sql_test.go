package actions_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// runtimeDatabase is a database whose schema is owned by a migration role
// (testdb.OwnerRole) with the roles script applied twice (it must be
// idempotent). It returns the superuser's URL and a pool of the owner, which
// tests use for fixtures: the owner is not a superuser, so its backends can
// be signalled with pg_signal_backend. It is a clone of a template the
// script ran on once per binary.
func runtimeDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	dbURL := runtimeTemplate.URL(t)
	return dbURL, testdb.Pool(t, testdb.AsUser(t, dbURL, testdb.OwnerRole))
}

var runtimeTemplate = testdb.Template{Name: "runtime roles", Owned: true, Build: func(tb testing.TB, url string) {
	for range 2 {
		testdb.Roles(tb, url, actions.RolesSQL())
	}
}}

// TestRolesSQLIsEnough runs actions as console_web on a schema it does not
// own, and checks what the role may not do.
func TestRolesSQLIsEnough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, owner := runtimeDatabase(t)
	super := testdb.Pool(t, dbURL)
	var isSuper bool
	require.NoError(t, super.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = 'console_web'").Scan(&isSuper))
	require.False(t, isSuper)
	require.Empty(t, testdb.ConsoleGrantsDiff(t, dbURL), "the roles hold exactly the rights reviewed")
	exec(t, super, `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shop_app') THEN
		CREATE ROLE shop_app LOGIN; END IF; END $$`)

	web := testdb.Pool(t, testdb.AsUser(t, dbURL, "console_web"))
	r := newRunner(t, web, actions.RunnerConfig{})
	_, err := r.Run(ctx, operator, "queue.pause", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
	require.NoError(t, err)
	insertDead(t, owner, 3, "emails", "smtp.timeout")
	_, err = r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
	require.NoError(t, err)

	app, err := pgx.Connect(ctx, testdb.AsUser(t, dbURL, "shop_app"))
	require.NoError(t, err)
	defer app.Close(ctx)
	done := make(chan error, 1)
	go func() { _, err := app.Exec(ctx, "SELECT pg_sleep(60)"); done <- err }()
	waitState(t, super, int32(app.PgConn().PID()), "active", "Timeout")
	out, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": app.PgConn().PID()}, Reason: reason})
	require.NoError(t, err, "pg_signal_backend suffices")
	require.True(t, out.Result.(actions.BackendResult).Signalled)
	require.Error(t, <-done)

	_, err = web.Exec(ctx, "UPDATE audit_events SET reason = 'x'")
	require.ErrorContains(t, err, "permission denied")
	_, err = web.Exec(ctx, "UPDATE audit_chain_head SET last_seq = 0")
	require.ErrorContains(t, err, "permission denied")
	_, err = web.Exec(ctx, "ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only")
	require.ErrorContains(t, err, "must be owner")
	res, err := audit.Verify(ctx, web)
	require.NoError(t, err)
	require.True(t, res.OK, res.Reason)
	require.Equal(t, 3, res.Checked)

	// No runtime role owns anything; only the audit recorders may lock the
	// audit chain.
	require.Zero(t, queryInt(t, super, `SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner
		WHERE r.rolname LIKE 'console\_%' AND r.rolname <> $1 AND c.relnamespace = 'public'::regnamespace`, testdb.OwnerRole))
	for role, may := range map[string]bool{"console_web": true, "console_operator": true, "console_worker": false,
		"console_readonly": false, "console_monitor": false, "shop_app": false, "public": false} {
		var got bool
		if role == "public" {
			require.NoError(t, super.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
				WHERE p.proname = 'audit_chain_lock' AND a.grantee = 0 AND a.privilege_type = 'EXECUTE')`).Scan(&got))
		} else {
			require.NoError(t, super.QueryRow(ctx, "SELECT has_function_privilege($1, 'audit_chain_lock()', 'EXECUTE')", role).Scan(&got))
		}
		require.Equal(t, may, got, "%s may execute audit_chain_lock()", role)
	}
	_, err = app.Exec(ctx, "SELECT * FROM audit_chain_lock()")
	require.ErrorContains(t, err, "permission denied")
}

// TestRolesDeclareEveryTable compares the tables and sequences of the
// migrated schema with the declaration RolesSQL is built from: a table a
// migration adds without deciding who may use it fails here, by name.
func TestRolesDeclareEveryTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	super := testdb.Pool(t, testdb.OwnedURL(t))
	declared := actions.DeclaredTables()
	rows, err := super.Query(ctx, `SELECT c.relname, c.relkind::text,
			EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'i')
		FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
		  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e') -- pg_stat_statements
		ORDER BY c.relname`)
	require.NoError(t, err)
	var name, kind string
	var identity bool
	var tables, missing []string
	_, err = pgx.ForEachRow(rows, []any{&name, &kind, &identity}, func() error {
		switch {
		case kind == "S" && identity:
			// An identity column's sequence: INSERT on its table is enough.
		case kind == "S":
			missing = append(missing, fmt.Sprintf("sequence %s is not an identity column's: make the column "+
				"GENERATED ALWAYS AS IDENTITY, or grant USAGE on it to the roles that insert into its table", name))
		default:
			tables = append(tables, name)
			if !slices.Contains(declared, name) {
				missing = append(missing, fmt.Sprintf("table %s has no entry in tableGrants (actions/roles_sql.go): "+
					"decide what console_monitor needs on it (console_readonly and diagnostics read it), "+
					"console_operator (the actions change it), console_worker (`console worker`: the engine) and "+
					"console_web (`console serve`: pages, API, alerts, history recording); an entry may grant nothing", name))
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, missing)
	for i, table := range declared {
		require.NotContains(t, declared[:i], table, "tableGrants declares %s twice: keep one entry", table)
		require.True(t, slices.Contains(tables, table), "tableGrants declares %s, which no migration creates: remove it", table)
	}
	require.Contains(t, tables, "history_samples", "the schema was read")
}

// TestRolesSQLGrantsExactly reads back every right each role holds after
// `console roles sql` ran twice, and compares it with the reviewed list:
// enough is not the test, nothing more is.
func TestRolesSQLGrantsExactly(t *testing.T) {
	t.Parallel()
	dbURL, _ := runtimeDatabase(t)
	require.Empty(t, testdb.ConsoleGrantsDiff(t, dbURL))

	// One right too many is named. (Only this database's grants change:
	// memberships are the whole server's, which other tests read.)
	super := testdb.Pool(t, dbURL)
	exec(t, super, "GRANT SELECT ON operators TO console_worker")
	diff := strings.Join(testdb.ConsoleGrantsDiff(t, dbURL), "\n")
	require.Contains(t, diff, "console_worker holds SELECT ON operators (directly)")
	require.Contains(t, diff, "console_worker holds SELECT ON operators (in effect)")
}

// TestRolesSQLReservedConnections checks console_web and console_readonly
// may use the reserved connection slots where the server has them
// (PostgreSQL 16 and later), and that the script runs on older servers.
func TestRolesSQLReservedConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, _ := runtimeDatabase(t)
	super := testdb.Pool(t, dbURL)
	version := queryInt(t, super, "SELECT current_setting('server_version_num')::int")
	for _, role := range []string{"console_web", "console_readonly", "console_worker"} {
		var member bool
		require.NoError(t, super.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_auth_members m
			JOIN pg_roles r ON r.oid = m.roleid JOIN pg_roles u ON u.oid = m.member
			WHERE r.rolname = 'pg_use_reserved_connections' AND u.rolname = $1)`, role).Scan(&member))
		require.Equal(t, version >= 160000 && role != "console_worker", member, "%s on server %d", role, version)
	}
	require.Contains(t, actions.RolesSQL(), "reserved_connections = 3", "the script says to set the slots aside")
}

// TestEveryActionRunsAsTheRuntimeRole runs every action of the registry as
// console_web, on a schema owned by another role.
func TestEveryActionRunsAsTheRuntimeRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	forEachAction(t, func(t *testing.T, spec actions.Spec, c actionCase) {
		dbURL, owner := runtimeDatabase(t)
		webURL := testdb.AsUser(t, dbURL, "console_web")
		web := testdb.Pool(t, webURL)
		r := caseRunner(t, c, webURL, web)
		params := c.setup(t, owner)
		before := c.state(t, owner)
		out, err := r.Run(ctx, c.actor, c.name, actions.Request{Params: params, Reason: reason})
		if spec.Name == "prepared_xact.rollback" {
			// PostgreSQL lets only a superuser or the preparing role
			// finish a prepared transaction: the runtime role is told
			// so, in words a DBA can act on, and nothing changes.
			require.ErrorIs(t, err, actions.ErrForbidden)
			require.ErrorContains(t, err, "only a superuser or the role that prepared it (console_owner)")
			require.Equal(t, before, c.state(t, owner))
			return
		}
		require.NoError(t, err)
		require.NotEqual(t, before, c.state(t, owner), "the database changed")
		ev := lastAudit(t, owner)
		require.Equal(t, out.AuditID, ev.ID)
		require.Equal(t, audit.OutcomeSucceeded, ev.Outcome)

		_, err = r.Run(ctx, c.weaker, c.name, actions.Request{Params: params, Reason: reason})
		require.ErrorIs(t, err, actions.ErrForbidden)
		require.Equal(t, audit.OutcomeRefused, lastAudit(t, owner).Outcome, "a refusal is audited by the runtime role too")
	})
}

// TestEveryPanelRunsAsTheRuntimeRoles runs the whole diagnostics catalog as
// console_web and console_readonly.
func TestEveryPanelRunsAsTheRuntimeRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, owner := runtimeDatabase(t)
	insertDead(t, owner, 2, "emails", "smtp.timeout")
	for _, role := range []string{"console_web", "console_readonly"} {
		t.Run(role, func(t *testing.T) {
			diag := openDiagnostics(t, testdb.AsUser(t, dbURL, role))
			results := diag.RunCatalog(ctx)
			require.NotEmpty(t, results)
			for _, res := range results {
				if errors.Is(res.Err, diagnostics.ErrUnsupported) {
					continue // a panel for a newer server than this one
				}
				require.NoError(t, res.Err, "panel %s as %s", res.Name, role)
			}
		})
	}
}
