package actions_test

import (
	"context"
	"errors"
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
// be signalled with pg_signal_backend.
func runtimeDatabase(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	dbURL := testdb.OwnedURL(t)
	for range 2 {
		testdb.Roles(t, dbURL, actions.RolesSQL())
	}
	return dbURL, testdb.Pool(t, testdb.AsUser(t, dbURL, testdb.OwnerRole))
}

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
