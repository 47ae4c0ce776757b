package actions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// prepareHolding prepares a transaction that holds row 1 of accounts and
// returns its gid (with a quote in it, as a transaction manager may
// write); it is rolled back at cleanup if still there.
func prepareHolding(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
	exec(t, pool, "CREATE TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, balance int NOT NULL)")
	exec(t, pool, "INSERT INTO accounts VALUES (1, 100), (2, 100) ON CONFLICT DO NOTHING")
	gid := fmt.Sprintf("o'reilly-%d", time.Now().UnixNano())
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	literal := "'" + strings.ReplaceAll(gid, "'", "''") + "'"
	_, err = conn.Exec(ctx, "BEGIN; UPDATE accounts SET balance = balance - 1 WHERE id = 1; PREPARE TRANSACTION "+literal)
	require.NoError(t, err)
	t.Cleanup(func() {
		var n int
		pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1", gid).Scan(&n)
		if n > 0 {
			pool.Exec(context.Background(), "ROLLBACK PREPARED "+literal)
		}
	})
	return gid
}

func preparedState(gid *string) func(t *testing.T, pool *pgxpool.Pool) string {
	return func(t *testing.T, pool *pgxpool.Pool) string {
		return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1", *gid))
	}
}

func preparedCases() []actionCase {
	var gid string
	return []actionCase{{
		name: "prepared_xact.rollback", actor: admin, weaker: operator, state: preparedState(&gid),
		setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
			gid = prepareHolding(t, pool)
			return map[string]any{"gid": gid, "confirm_gid": gid}
		},
	}}
}

// A prepared transaction holds a row a session waits for. The rollback
// wants the gid typed again, refuses a gid prepared at another time than
// previewed, and once run frees the waiter; the audit event says so.
func TestPreparedXactRollbackFreesTheWaiter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})
	gid := prepareHolding(t, pool)
	waiter := newSession(t, pool)
	waiter.start("UPDATE accounts SET balance = balance + 1 WHERE id = 1")
	waitState(t, pool, waiter.pid, "active", "Lock")

	_, err := r.Run(ctx, admin, "prepared_xact.rollback", actions.Request{Reason: reason,
		Params: map[string]any{"gid": gid, "confirm_gid": gid + "x"}})
	require.ErrorIs(t, err, actions.ErrInvalid)
	require.Contains(t, err.Error(), "confirm_gid")

	dry, err := r.Run(ctx, admin, "prepared_xact.rollback", actions.Request{DryRun: true,
		Params: map[string]any{"gid": gid, "confirm_gid": gid}})
	require.NoError(t, err)
	pv := dry.Preview.(actions.PreparedXactPreview)
	require.True(t, pv.IsRoot)
	require.Equal(t, 1, pv.BlockedCount)
	require.NotEmpty(t, pv.Target.Owner)
	require.NotEmpty(t, pv.Target.Database)

	_, err = r.Run(ctx, admin, "prepared_xact.rollback", actions.Request{Reason: reason,
		Params: map[string]any{"gid": gid, "confirm_gid": gid, "prepared_at": pv.Target.Prepared.Add(-time.Second).Format(time.RFC3339Nano)}})
	require.ErrorIs(t, err, actions.ErrGuard)
	require.Equal(t, "1", preparedState(&gid)(t, pool), "the guard kept it")

	out, err := r.Run(ctx, admin, "prepared_xact.rollback", actions.Request{Reason: reason,
		Params: map[string]any{"gid": gid, "confirm_gid": gid, "prepared_at": pv.Target.Prepared.Format(time.RFC3339Nano)}})
	require.NoError(t, err)
	res := out.Result.(actions.PreparedXactResult)
	require.True(t, res.RolledBack)
	require.NoError(t, waiter.wait(t), "the waiter got the row")
	require.Equal(t, "0", preparedState(&gid)(t, pool))
	ev := lastAudit(t, pool)
	require.Equal(t, audit.OutcomeSucceeded, ev.Outcome)
	require.Equal(t, "prepared_xact:"+gid, ev.Target)

	_, err = r.Run(ctx, admin, "prepared_xact.rollback", actions.Request{Reason: reason,
		Params: map[string]any{"gid": gid, "confirm_gid": gid, "prepared_at": pv.Target.Prepared.Format(time.RFC3339Nano)}})
	require.ErrorIs(t, err, actions.ErrGuard, "gone since the preview")
}
