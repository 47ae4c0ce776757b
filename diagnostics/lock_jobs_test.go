package diagnostics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/queues"
)

// startEngine runs a queues client on url serving queue with handle for
// kind, on a pool named as the engine names its connections; stopped at
// cleanup.
func startEngine(t *testing.T, url, queue, kind string, concurrency int, handle queues.HandlerFunc) *queues.Client {
	t.Helper()
	cfg, err := queues.PoolConfig(url)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	c, err := queues.NewClient(pool, queues.ClientConfig{
		Queues:       map[string]queues.QueueConfig{queue: {Concurrency: concurrency}},
		PollInterval: 50 * time.Millisecond, ID: "lock-worker-" + queue, Registerer: prometheus.NewRegistry(),
	})
	require.NoError(t, err)
	c.Handle(kind, handle)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		c.Stop(sctx)
		cancel()
	})
	return c
}

// Jobs whose own sessions wait behind a root, directly or behind another
// job, are listed on the root's finding with their queue, kind, wait and
// page.
func TestRootFindingListsTheJobsBehindIt(t *testing.T) {
	ctx, url := freshDB(t)
	setup := connect(t, url, "setup")
	_, err := setup.Exec(ctx, "CREATE TABLE ledger (id int PRIMARY KEY, n int); INSERT INTO ledger VALUES (1, 0)")
	require.NoError(t, err)
	root := connect(t, url, "backfill")
	begin(t, root, "UPDATE ledger SET n = -1 WHERE id = 1")
	released := false
	release := func() {
		if !released {
			released = true
			root.Exec(context.Background(), "ROLLBACK")
		}
	}
	c := startEngine(t, url, "mail", "send", 2, func(ctx context.Context, j *queues.Job) error {
		conn, err := queues.JobConn(ctx)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "UPDATE ledger SET n = n + 1 WHERE id = 1")
		return err
	})
	t.Cleanup(release) // before the engine stops: its jobs are waiting
	var ids []int64
	for range 2 {
		j, err := c.Enqueue(ctx, queues.EnqueueParams{Queue: "mail", Kind: "send"})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}

	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	f := awaitFinding(t, d, findings.CodeRootBlocker, 20*time.Second, func(f findings.Finding) bool {
		jobs, _ := f.Subject["jobs"].([]diagnostics.JobBehind)
		return f.Subject["pid"] == pidOf(root) && len(jobs) == 2
	})
	jobs := f.Subject["jobs"].([]diagnostics.JobBehind)
	got := map[int64]diagnostics.JobBehind{}
	for _, j := range jobs {
		got[j.ID] = j
	}
	for _, id := range ids {
		j, ok := got[id]
		require.True(t, ok, "job %d is listed: %+v", id, jobs)
		require.Equal(t, "mail", j.Queue)
		require.Equal(t, "send", j.Kind)
		require.Equal(t, fmt.Sprintf("/jobs/%d", id), j.URL)
		require.NotZero(t, j.PID)
		require.Contains(t, f.Evidence, fmt.Sprintf("job %d (queue mail, kind send, waiting ", id))
	}
	require.Contains(t, f.Evidence, "2 jobs wait behind it: ")

	// A job's own wait names what it waits for and the root's actions.
	rows := d.BlockingTree(ctx)
	require.NoError(t, rows.Err)
	for _, id := range ids {
		w, ok := diagnostics.JobLockWaitOf(rows.Rows, id)
		require.True(t, ok, "job %d waits: %s", id, treeText(rows.Rows))
		require.Equal(t, pidOf(root), w.Root.PID)
		require.Equal(t, got[id].PID, w.Waiter.PID)
		require.NotEmpty(t, w.Waiter.LockText())
		require.NotNil(t, w.Waiter.ParentPID)
		if *w.Waiter.ParentPID != pidOf(root) {
			require.NotNil(t, w.HolderJobID, "the job it waits behind is named")
			require.Contains(t, ids, *w.HolderJobID)
			require.True(t, strings.HasPrefix(w.HolderApplication, "console-worker job="), w.HolderApplication)
		}
	}
	_, ok := diagnostics.JobLockWaitOf(rows.Rows, ids[0]+ids[1])
	require.False(t, ok, "a job that does not wait has no lock wait")
	release()
}

// A backfill holds LOCK TABLE jobs: the engine's claims wait behind it.
// The finding ties the stalled queue to the blocking pid and the time the
// first claim began to wait, and offers the root's actions.
func TestEngineStalledFindingNamesTheQueues(t *testing.T) {
	ctx, url := freshDB(t)
	startEngine(t, url, "mail", "send", 1, func(ctx context.Context, j *queues.Job) error { return nil })
	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	eventually(t, 20*time.Second, func() (bool, string) {
		ws := d.Workers(ctx)
		return ws.Err == nil && len(ws.Rows) == 1 && ws.Rows[0].Alive, ws.Status()
	})
	backfill := connect(t, url, "backfill")
	begin(t, backfill, "LOCK TABLE jobs IN EXCLUSIVE MODE")
	t.Cleanup(func() { backfill.Exec(context.Background(), "ROLLBACK") })

	// The reaper may be the first engine session to wait; the finding
	// fires then, and names the claims once a claim waits too.
	f := awaitFinding(t, d, findings.CodeEngineStalled, 20*time.Second, func(f findings.Finding) bool {
		return f.Subject["pid"] == pidOf(backfill) && strings.Contains(f.Evidence, "JobClaim")
	})
	require.Equal(t, findings.SeverityCritical, f.Severity)
	require.Equal(t, []string{"mail"}, f.Subject["queues"])
	since, ok := f.Subject["since"].(time.Time)
	require.True(t, ok, "%v", f.Subject)
	require.WithinDuration(t, time.Now(), since, time.Minute)
	require.Equal(t, fmt.Sprintf("Workers of queue mail wait on a lock held by pid %d since %s", pidOf(backfill), since.Format("15:04:05")), f.Title)
	require.Contains(t, f.Evidence, "holds ExclusiveLock on jobs (relation)")
	require.Equal(t, "jobs", f.Subject["lock_target"])
	require.Equal(t, []string{findings.ActionBackendTerminate, findings.ActionBackendCancel}, f.Actions)
	require.Equal(t, "/runbook/blocking", f.Runbook)
}
