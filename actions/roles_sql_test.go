package actions_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/testdb"
)

func asUser(t *testing.T, raw, user string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.User(user)
	return u.String()
}

// TestRolesSQLIsEnough applies the script and runs actions as console_web,
// a role that is not a superuser.
func TestRolesSQLIsEnough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	super := testdb.Pool(t, dbURL)
	for range 2 { // idempotent
		_, err := super.Exec(ctx, actions.RolesSQL())
		require.NoError(t, err)
	}
	var isSuper bool
	require.NoError(t, super.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = 'console_web'").Scan(&isSuper))
	require.False(t, isSuper)
	exec(t, super, `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'shop_app') THEN
		CREATE ROLE shop_app LOGIN; END IF; END $$`)

	web := testdb.Pool(t, asUser(t, dbURL, "console_web"))
	r := newRunner(t, web, actions.RunnerConfig{})
	_, err := r.Run(ctx, operator, "queue.pause", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
	require.NoError(t, err)
	insertDead(t, super, 3, "emails", "smtp.timeout")
	_, err = r.Run(ctx, operator, "deadletters.requeue", actions.Request{Params: map[string]any{"queue": "emails"}, Reason: reason})
	require.NoError(t, err)

	app, err := pgx.Connect(ctx, asUser(t, dbURL, "shop_app"))
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
	res, err := audit.Verify(ctx, web)
	require.NoError(t, err)
	require.True(t, res.OK, res.Reason)
	require.Equal(t, 3, res.Checked)
}
