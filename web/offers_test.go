package web

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// workerChain runs a real worker on e's database whose `report` job (max
// attempts maxAttempts) takes row 1 of ledger in its own session and
// sleeps, and waiters `post` jobs whose sessions queue behind it for the
// same row. It returns the report job, the pid of its session and the
// waiting jobs.
func workerChain(t *testing.T, e *env, maxAttempts, waiters int) (int64, int32, []int64) {
	t.Helper()
	ctx := context.Background()
	e.exec(t, "CREATE TABLE ledger (id int PRIMARY KEY, n int NOT NULL); INSERT INTO ledger VALUES (1, 0)")
	cfg, err := queues.PoolConfig(e.url)
	require.NoError(t, err)
	c, err := queues.NewClient(testdb.Pool(t, cfg.ConnString()), queues.ClientConfig{
		ID:             "worker-reports",
		Queues:         map[string]queues.QueueConfig{"reports": {Concurrency: 1}, "ledger": {Concurrency: waiters}},
		PollInterval:   100 * time.Millisecond,
		RetryDelayFunc: func(int) time.Duration { return time.Hour }, // a retried report must not lock again
	})
	require.NoError(t, err)
	c.Handle("report", jobSQL("BEGIN; UPDATE ledger SET n = n + 1 WHERE id = 1; SELECT pg_sleep(60); COMMIT"))
	c.Handle("post", jobSQL("UPDATE ledger SET n = n + 1 WHERE id = 1"))
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		// The report sleeps for a minute: cancel it rather than wait out the drain.
		e.owner.Exec(context.Background(), `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE 'console-worker job=%'`)
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Stop(sctx)
	})
	app := func(id int64) string { return fmt.Sprintf("console-worker job=%d", id) }
	root, err := c.Enqueue(ctx, queues.EnqueueParams{Queue: "reports", Kind: "report", MaxAttempts: maxAttempts})
	require.NoError(t, err)
	testdb.WaitBackend(t, e.owner, app(root.ID), "datname = current_database() AND wait_event = 'PgSleep'")
	var waiting []int64
	for range waiters {
		j, err := c.Enqueue(ctx, queues.EnqueueParams{Queue: "ledger", Kind: "post"})
		require.NoError(t, err)
		testdb.WaitBackend(t, e.owner, app(j.ID), "datname = current_database() AND wait_event_type = 'Lock'")
		waiting = append(waiting, j.ID)
	}
	return root.ID, backendPID(t, e.owner, app(root.ID)), waiting
}

// jobSQL is a handler that runs sql in the job's own session.
func jobSQL(sql string) queues.HandlerFunc {
	return func(ctx context.Context, _ *queues.Job) error {
		conn, err := queues.JobConn(ctx)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, sql)
		return err
	}
}

// backendPID is the pid of the backend of this database named app.
func backendPID(t *testing.T, pool *pgxpool.Pool, app string) int32 {
	t.Helper()
	var pid int32
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", app).Scan(&pid))
	return pid
}

// A page never offers a signal the guards would refuse: for a backend that
// is gone, is not a client backend or is the console's own connection, the
// buttons give way to the refusal, drawn instead of a button.
func TestSignalOffersFollowTheGuards(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	live := testdb.Connect(t, e.url, "backfill")
	gone := testdb.Connect(t, e.url, "finished")
	gonePID := int32(gone.PgConn().PID())
	require.NoError(t, gone.Close(ctx))
	testdb.Eventually(t, 10*time.Second, "the closed session to end", func() bool {
		return e.queryInt(t, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", gonePID) == 0
	})
	var checkpointer int32
	super := testdb.Pool(t, e.superURL) // another role's rows read NULL in pg_stat_activity
	require.NoError(t, super.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'").Scan(&checkpointer))
	require.NoError(t, e.srv.cfg.Diagnostics.BlockingTree(ctx).Err)
	own := e.srv.cfg.Diagnostics.OwnPIDs()
	require.NotEmpty(t, own, "the diagnostics pool has a connection open")

	guard := e.srv.backendGuard(ctx)
	offered := func(pid int32) []views.ActionLink {
		names := []string{findings.ActionBackendCancel, findings.ActionBackendTerminate}
		return guardOffers(actionLinks(names, auth.RoleAdmin, map[string]string{"pid": fmt.Sprint(pid)}), guard)
	}
	links := offered(int32(live.PgConn().PID()))
	require.Len(t, links, 2, "a client session of the console's database is offered both signals")
	for _, l := range links {
		require.Empty(t, l.Refused)
		require.NotEmpty(t, l.Href)
	}
	for _, c := range []struct {
		name string
		pid  int32
		why  string
	}{
		{"Gone", gonePID, fmt.Sprintf("Not offered: no session has pid %d any more; it may have finished. Refresh the blocking tree.", gonePID)},
		{"NotAClient", checkpointer, fmt.Sprintf(`Not offered: backend %d is a "checkpointer", not a client backend; the console only signals client sessions.`, checkpointer)},
		{"Console", own[0], fmt.Sprintf("Not offered: backend %d is the console's own connection.", own[0])},
	} {
		t.Run(c.name, func(t *testing.T) {
			links := offered(c.pid)
			require.Len(t, links, 1, "one refusal instead of both buttons")
			require.Equal(t, c.why, links[0].Refused)
			require.Empty(t, links[0].Href, "nothing to click")
			var b bytes.Buffer
			require.NoError(t, views.ActionButton(links[0]).Render(ctx, &b))
			require.Contains(t, b.String(), `data-testid="refused-backend.cancel"`)
			require.NotContains(t, b.String(), "<a ")
		})
	}
}

// When the root blocker is a queue job's session, its job's page and the
// tree offer cancelling the job (the engine's job.cancel) before signalling
// the session.
func TestRootJobSessionOffersTheJobCancel(t *testing.T) {
	t.Parallel()
	e := setup(t)
	root, pid, waiting := workerChain(t, e, 1, 1)
	op := e.signedIn(t, "operator")

	var m views.JobDetail
	testdb.Eventually(t, 20*time.Second, "the waiting job's page to say it waits", func() bool {
		m = views.JobDetail{}
		op.getJSON("/jobs/"+itoa64(waiting[0]), &m)
		return m.LockWait != nil
	})
	require.NotEmpty(t, m.LockWait.Actions)
	first := m.LockWait.Actions[0]
	require.Equal(t, "job.cancel", first.Name, "cancelling the root's job comes first")
	require.Equal(t, "Cancel job #"+itoa64(root), first.Label)
	require.Equal(t, "/actions/job.cancel?id="+itoa64(root), first.Href)
	require.Equal(t, findings.ActionBackendCancel, m.LockWait.Actions[1].Name, "then the signal of its session")
	require.Contains(t, m.LockWait.Actions[1].Href, fmt.Sprintf("pid=%d", pid))

	panel := op.page("/panels/blocking_tree")
	require.Contains(t, panel, `href="/actions/job.cancel?id=`+itoa64(root)+`"`)
}
