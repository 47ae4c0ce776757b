package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/internal/testdb"
)

// session is one extra client backend a test drives.
type session struct {
	conn    *pgx.Conn
	pid     int32
	done    chan error
	cancel  context.CancelFunc
	started bool
}

func newSession(t *testing.T, pool *pgxpool.Pool) *session {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	s := &session{conn: conn, pid: int32(conn.PgConn().PID()), done: make(chan error, 1), cancel: func() {}}
	t.Cleanup(func() {
		// Stop a statement still running before closing the connection
		// under it.
		s.cancel()
		if s.started {
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
			}
		}
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	})
	return s
}

// start runs sql in the background; wait returns its error.
func (s *session) start(sql string) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.started = cancel, true
	go func() {
		_, err := s.conn.Exec(ctx, sql)
		s.done <- err
	}()
}

func (s *session) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		s.started = false
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("session %d did not finish", s.pid)
		return nil
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitState(t *testing.T, pool *pgxpool.Pool, pid int32, state, waitType string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("backend %d to be %s %s", pid, state, waitType), func() bool {
		var n int
		pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE pid = $1 AND state = $2 AND ($3 = '' OR wait_event_type = $3)`, pid, state, waitType).Scan(&n)
		return n == 1
	})
}

func backendState(pid *int32) func(t *testing.T, pool *pgxpool.Pool) string {
	return func(t *testing.T, pool *pgxpool.Pool) string {
		return queryText(t, pool, `SELECT coalesce((SELECT state || ':' || query_start::text FROM pg_stat_activity
			WHERE pid = $1), 'gone')`, *pid)
	}
}

// sleeper starts a backend running pg_sleep, a cancellable statement.
// previewCancel runs backend.cancel of pid as a dry run and returns its
// preview.
func previewCancel(t *testing.T, r *actions.Runner, pid int32) actions.BackendPreview {
	t.Helper()
	dry, err := r.Run(context.Background(), operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": pid}, DryRun: true})
	require.NoError(t, err)
	return dry.Preview.(actions.BackendPreview)
}

// idleInTransaction opens a session and leaves it idle in an open
// transaction.
func idleInTransaction(t *testing.T, pool *pgxpool.Pool) *session {
	t.Helper()
	s := newSession(t, pool)
	_, err := s.conn.Exec(context.Background(), "BEGIN; SELECT 1")
	require.NoError(t, err)
	waitState(t, pool, s.pid, "idle in transaction", "")
	return s
}

func sleeper(t *testing.T, pool *pgxpool.Pool) *session {
	s := newSession(t, pool)
	s.start("SELECT pg_sleep(60)")
	waitState(t, pool, s.pid, "active", "Timeout")
	return s
}

func backendCases() []actionCase {
	var pid int32
	return []actionCase{
		{
			name: "backend.cancel", actor: operator, weaker: viewer, state: backendState(&pid),
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				pid = sleeper(t, pool).pid
				return map[string]any{"pid": pid}
			},
		},
		{
			name: "backend.terminate", actor: admin, weaker: operator, state: backendState(&pid),
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				pid = sleeper(t, pool).pid
				return map[string]any{"pid": pid, "confirm_pid": fmt.Sprint(pid), "override": true}
			},
		},
	}
}

// chain builds a three-level blocking chain: root holds row 1 in a
// transaction and sleeps; mid holds row 2 and waits for row 1; leaf waits
// for row 2. rootSQL is what the root runs while holding row 1 ("" leaves
// it idle in transaction).
func chain(t *testing.T, pool *pgxpool.Pool, rootSQL string) (root, mid, leaf *session) {
	t.Helper()
	ctx := context.Background()
	exec(t, pool, "CREATE TABLE IF NOT EXISTS accounts (id int PRIMARY KEY, balance int NOT NULL)")
	exec(t, pool, "INSERT INTO accounts VALUES (1, 100), (2, 100) ON CONFLICT DO NOTHING")
	root, mid, leaf = newSession(t, pool), newSession(t, pool), newSession(t, pool)
	_, err := root.conn.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = root.conn.Exec(ctx, "UPDATE accounts SET balance = balance - 1 WHERE id = 1")
	require.NoError(t, err)
	if rootSQL != "" {
		root.start(rootSQL)
		waitState(t, pool, root.pid, "active", "")
	}
	mid.start(`DO $$ BEGIN
		UPDATE accounts SET balance = balance + 1 WHERE id = 2;
		UPDATE accounts SET balance = balance + 1 WHERE id = 1;
	END $$`)
	waitState(t, pool, mid.pid, "active", "Lock")
	leaf.start("UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	waitState(t, pool, leaf.pid, "active", "Lock")
	waitFor(t, "a three-level tree", func() bool {
		tree, err := diagnostics.BlockingTree(ctx, pool)
		require.NoError(t, err)
		for _, n := range tree {
			if n.PID == leaf.pid && n.Depth == 2 && n.RootPID == root.pid {
				return true
			}
		}
		return false
	})
	return root, mid, leaf
}

type auditTrees struct {
	Preview struct {
		Target       actions.Fingerprint        `json:"target"`
		IsRoot       bool                       `json:"is_root"`
		BlockedCount int                        `json:"blocked_count"`
		Tree         []diagnostics.BlockingNode `json:"tree"`
		NextStep     string                     `json:"next_step"`
	}
	Result actions.BackendResult
}

func readTrees(t *testing.T, ev audit.Event) auditTrees {
	t.Helper()
	var at auditTrees
	require.NoError(t, json.Unmarshal(ev.Preview, &at.Preview))
	require.NoError(t, json.Unmarshal(ev.Result, &at.Result))
	return at
}

func TestBackendCancelClearsThreeLevelChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{SettleTimeout: 10 * time.Second})
	root, mid, leaf := chain(t, pool, "SELECT pg_sleep(60)")

	pv := previewCancel(t, r, root.pid)
	require.True(t, pv.IsRoot)
	require.Equal(t, 2, pv.BlockedCount)
	require.Equal(t, "client backend", pv.Target.BackendType)
	require.NotNil(t, pv.Target.BackendStart)
	require.NotNil(t, pv.Target.XactStart)
	require.Empty(t, pv.NextStep, "an active root can be cancelled")

	out, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Reason: reason, Params: map[string]any{
		"pid":           root.pid,
		"backend_start": pv.Target.BackendStart.Format(time.RFC3339Nano),
		"xact_start":    pv.Target.XactStart.Format(time.RFC3339Nano),
	}})
	require.NoError(t, err)
	res := out.Result.(actions.BackendResult)
	require.True(t, res.Signalled)
	require.True(t, res.Cleared, res.Message)
	require.Contains(t, res.Message, "chain cleared")

	var pgErr *pgconn.PgError
	require.True(t, errors.As(root.wait(t), &pgErr))
	require.Equal(t, "57014", pgErr.Code, "the root's statement was cancelled")
	require.NoError(t, mid.wait(t), "the middle of the chain went through")
	require.NoError(t, leaf.wait(t), "the leaf went through")

	ev, err := audit.Get(ctx, pool, out.AuditID)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("backend:%d", root.pid), ev.Target)
	trees := readTrees(t, *ev)
	var chainNodes []int32 // other tests' chains run in other databases of the same server
	for _, n := range trees.Preview.Tree {
		if n.RootPID == root.pid {
			chainNodes = append(chainNodes, n.PID)
		}
	}
	require.ElementsMatch(t, []int32{root.pid, mid.pid, leaf.pid}, chainNodes, "the before tree has the whole chain")
	require.True(t, trees.Result.Cleared)
	for _, n := range trees.Result.Tree {
		require.NotContains(t, []int32{mid.pid, leaf.pid}, n.PID, "the after tree no longer has the chain")
	}
}

func TestBackendCancelIdleInTransactionThenTerminate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{SettleTimeout: 500 * time.Millisecond})
	root, mid, leaf := chain(t, pool, "")
	waitState(t, pool, root.pid, "idle in transaction", "")

	pv := previewCancel(t, r, root.pid)
	require.Contains(t, pv.Effect, "does nothing")
	require.Equal(t, "backend.terminate", pv.NextStep)

	terminate := map[string]any{"pid": root.pid, "confirm_pid": root.pid}
	_, err := r.Run(ctx, admin, "backend.terminate", actions.Request{Params: terminate, Reason: reason})
	require.ErrorIs(t, err, actions.ErrGuard, "terminate needs a cancel attempt first")
	require.ErrorContains(t, err, "only after a backend.cancel")

	out, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": root.pid}, Reason: reason})
	require.NoError(t, err)
	res := out.Result.(actions.BackendResult)
	require.False(t, res.Cleared)
	require.Equal(t, "backend.terminate", res.NextStep)
	require.Equal(t, []int32{root.pid}, res.NewRoots)

	_, err = r.Run(ctx, operator, "backend.terminate", actions.Request{Params: terminate, Reason: reason})
	require.ErrorIs(t, err, actions.ErrForbidden)

	r2 := newRunner(t, pool, actions.RunnerConfig{SettleTimeout: 10 * time.Second})
	out, err = r2.Run(ctx, admin, "backend.terminate", actions.Request{Params: terminate, Reason: reason})
	require.NoError(t, err)
	res = out.Result.(actions.BackendResult)
	require.True(t, res.Cleared, res.Message)
	require.True(t, res.TargetGone)
	require.NoError(t, mid.wait(t))
	require.NoError(t, leaf.wait(t))
}

// The diagnostics pool's backends are the console's own as well: a runner
// given the diagnostics refuses to cancel or terminate them, though nothing
// but their pids says so.
func TestBackendRefusesDiagnosticsConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, diag := poolWithDiagnostics(t)
	require.NoError(t, diag.Activity(ctx).Err, "a panel opens a diagnostics connection")
	pids := diag.OwnPIDs()
	require.NotEmpty(t, pids)
	target := map[string]any{"pid": pids[0]}

	// Nothing else marks it: a runner that does not know the diagnostics
	// would take it for an ordinary client of the console's database.
	_, err := newRunner(t, pool, actions.RunnerConfig{}).Run(ctx, operator, "backend.cancel",
		actions.Request{Params: target, DryRun: true})
	require.NoError(t, err)

	r := newRunner(t, pool, actions.RunnerConfig{Diagnostics: diag})
	for action, params := range map[string]map[string]any{
		"backend.cancel":    target,
		"backend.terminate": {"pid": pids[0], "confirm_pid": pids[0]},
	} {
		_, err = r.Run(ctx, admin, action, actions.Request{Params: params, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid, action)
		require.ErrorContains(t, err, "console's own connection", action)
		require.Equal(t, audit.OutcomeRefused, lastAudit(t, pool).Outcome)
	}
	require.EqualValues(t, 1, queryInt(t, pool, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pids[0]),
		"the diagnostics connection is still there")
}

func TestBackendGuards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, r := setupRunner(t, actions.RunnerConfig{})

	t.Run("PIDReuse", func(t *testing.T) {
		old := idleInTransaction(t, pool)
		fp := previewCancel(t, r, old.pid).Target
		require.NoError(t, old.conn.Close(ctx))
		waitFor(t, "the old backend to exit", func() bool {
			return queryInt(t, pool, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", old.pid) == 0
		})

		// The operator confirms the previewed fingerprint; the pid now
		// belongs to nobody, or (simulated) to a new backend.
		stale := map[string]any{"pid": old.pid, "backend_start": fp.BackendStart.Format(time.RFC3339Nano),
			"xact_start": fp.XactStart.Format(time.RFC3339Nano)}
		_, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: stale, Reason: reason})
		require.ErrorIs(t, err, actions.ErrGuard)
		require.ErrorContains(t, err, "has ended since the preview")

		fresh := sleeper(t, pool)
		stale["pid"] = fresh.pid
		_, err = r.Run(ctx, operator, "backend.cancel", actions.Request{Params: stale, Reason: reason})
		require.ErrorIs(t, err, actions.ErrGuard)
		require.ErrorContains(t, err, "pid was reused")
		ev := lastAudit(t, pool)
		require.Equal(t, audit.OutcomeRefused, ev.Outcome)
		waitState(t, pool, fresh.pid, "active", "Timeout") // untouched
	})
	t.Run("TransactionEnded", func(t *testing.T) {
		s := idleInTransaction(t, pool)
		fp := previewCancel(t, r, s.pid).Target
		_, err := s.conn.Exec(ctx, "COMMIT")
		require.NoError(t, err)
		_, err = r.Run(ctx, operator, "backend.cancel", actions.Request{Reason: reason, Params: map[string]any{
			"pid": s.pid, "backend_start": fp.BackendStart.Format(time.RFC3339Nano), "xact_start": fp.XactStart.Format(time.RFC3339Nano)}})
		require.ErrorIs(t, err, actions.ErrGuard)
		require.ErrorContains(t, err, "xact_start")
	})
	t.Run("NotAClientBackend", func(t *testing.T) {
		var pid int32
		require.NoError(t, pool.QueryRow(ctx,
			"SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend' ORDER BY pid LIMIT 1").Scan(&pid))
		_, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": pid}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid)
		require.ErrorContains(t, err, "not a client backend")
	})
	t.Run("ConsoleOwnConnection", func(t *testing.T) {
		// A name proves nothing: a client calling itself console-web is
		// an ordinary backend.
		conn := testdb.Connect(t, pool.Config().ConnString(), "console-web")
		_, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": conn.PgConn().PID()}, DryRun: true})
		require.NoError(t, err, "a client named console-... is not the console")

		// The console's own connections are known by pid.
		var own ownpid.Set
		pc := pool.Config().Copy()
		own.Track(pc)
		ownPool, err := pgxpool.NewWithConfig(ctx, pc)
		require.NoError(t, err)
		defer ownPool.Close()
		held, err := ownPool.Acquire(ctx)
		require.NoError(t, err)
		pid := held.Conn().PgConn().PID()
		require.Contains(t, own.PIDs(), int32(pid))
		other, err := ownPool.Acquire(ctx)
		require.NoError(t, err)
		otherPID := other.Conn().PgConn().PID()
		other.Release()
		ownRunner := newRunner(t, ownPool, actions.RunnerConfig{OwnPIDs: own.PIDs})
		_, err = ownRunner.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": pid}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid)
		require.ErrorContains(t, err, "console's own")
		held.Release()
		ownPool.Reset() // closes the connections: they leave the set
		waitFor(t, "closed connections leave the set", func() bool { return len(own.PIDs()) == 0 })
		_ = otherPID
	})
	t.Run("OtherDatabase", func(t *testing.T) {
		otherURL := testdb.URL(t)
		elsewhere := sleeper(t, testdb.Pool(t, otherURL))
		_, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": elsewhere.pid}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrInvalid)
		require.ErrorContains(t, err, "not to the console's database")
		anyDB := newRunner(t, pool, actions.RunnerConfig{AnyDatabase: true})
		_, err = anyDB.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": elsewhere.pid}, DryRun: true})
		require.NoError(t, err, "configured to, the console signals other databases' backends")
	})
	t.Run("UnknownPID", func(t *testing.T) {
		_, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": 1 << 30}, Reason: reason})
		require.ErrorIs(t, err, actions.ErrNotFound)
	})
}

// TestSignalRecordedWhenCallerLeaves: the caller goes away (its context is
// cancelled) after the signal was sent, while the action watches the tree
// settle. The run still finishes and is audited as succeeded, with the
// signal in its result.
func TestSignalRecordedWhenCallerLeaves(t *testing.T) {
	t.Parallel()
	pool, r := setupRunner(t, actions.RunnerConfig{SettleTimeout: 5 * time.Second})
	// A cancel does nothing to a root idle in transaction: the chain does
	// not clear, so the settle wait lasts its whole time.
	root, _, _ := chain(t, pool, "")
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	go func() {
		for ctx.Err() == nil {
			// The action's transaction sent the signal and waits for the
			// tree to settle.
			var sent bool
			if pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
				WHERE datname = current_database() AND state = 'idle in transaction' AND query LIKE '-- backendCancel:%')`).Scan(&sent) == nil && sent {
				leave() // the caller disconnects
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Params: map[string]any{"pid": root.pid}, Reason: reason})
	require.ErrorIs(t, ctx.Err(), context.Canceled, "the caller left during the run")
	require.NoError(t, err)
	res := out.Result.(actions.BackendResult)
	require.True(t, res.Signalled)
	require.False(t, res.Cleared)
	ev := lastAudit(t, pool)
	require.Equal(t, "backend.cancel", ev.Action)
	require.Equal(t, audit.OutcomeSucceeded, ev.Outcome, ev.Error)
	require.Equal(t, out.AuditID, ev.ID)
}
