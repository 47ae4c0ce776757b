package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/internal/testdb"
)

// TestDemoLockChainCanBeCancelled: the demo's lock chain is rooted in a
// session that is not the console's, so the flagship action (cancel the
// root blocker) passes the guards, clears the chain, and the queued jobs
// finish, as it does on a real incident.
func TestDemoLockChainCanBeCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testdb.URL(t)
	own := &ownpid.Set{}
	pcfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	own.Track(pcfg)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, demoSetupSQL)
	require.NoError(t, err)
	eng, err := startEngine(ctx, url, engineConfig{Queues: []string{"drills"}, Concurrency: 4, AllowSQL: true, Own: own},
		prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer func() { _ = eng.stop() }()

	require.NoError(t, demoLockChain(ctx, pool))
	var root diagnostics.BlockingNode
	var waiters []diagnostics.BlockingNode
	require.Eventually(t, func() bool {
		nodes, err := diagnostics.BlockingTree(ctx, pool)
		require.NoError(t, err)
		waiters = waiters[:0]
		for _, n := range nodes {
			if n.Depth == 0 {
				root = n
			} else {
				waiters = append(waiters, n)
			}
		}
		return len(waiters) == 2
	}, time.Minute, 100*time.Millisecond, "the demo's chain stands: a root and two jobs queued behind it")
	require.Equal(t, demoRootApplication, root.ApplicationName, "the root is the other application's session")
	require.False(t, slices.Contains(own.PIDs(), root.PID), "the root is not one of the console's connections")
	for _, w := range waiters {
		require.NotNil(t, w.JobID, "waiter pid %d is a drills job", w.PID)
	}

	r, err := actions.NewRunner(pool, actions.RunnerConfig{OwnPIDs: own.PIDs})
	require.NoError(t, err)
	operator := actions.Actor{Name: "olga", Role: auth.RoleOperator}
	dry, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": root.PID}, DryRun: true})
	require.NoError(t, err, "the guards let an operator cancel the demo's root")
	pv := dry.Preview.(actions.BackendPreview)
	require.True(t, pv.IsRoot)
	require.Equal(t, 2, pv.BlockedCount)
	out, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Reason: "demo: clear the drill", Params: map[string]any{
		"pid":           root.PID,
		"backend_start": pv.Target.BackendStart.Format(time.RFC3339Nano),
		"xact_start":    pv.Target.XactStart.Format(time.RFC3339Nano),
	}})
	require.NoError(t, err)
	res := out.Result.(actions.BackendResult)
	require.True(t, res.Cleared, res.Message)
	require.Eventually(t, func() bool {
		var done int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE queue = 'drills' AND status = 'done'`).Scan(&done))
		return done == 2
	}, time.Minute, 100*time.Millisecond, "both queued jobs finish once the root is cancelled")
}
