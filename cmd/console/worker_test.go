package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// startWorker runs `console worker` as a child process (the test binary
// re-executed as main) against url.
func startWorker(t *testing.T, url string, args string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "CONSOLE_TEST_MAIN=1", "CONSOLE_TEST_ARGS=worker "+args, "DATABASE_URL="+url)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("worker output:\n%s", out.String())
		}
	})
	return cmd
}

// TestWorkerKilledMidJob: a `console worker` process is killed with SIGKILL
// while it runs jobs; a second worker takes the jobs over once their leases
// expire, and every job completes exactly once, none lost, with the killed
// attempt counted.
func TestWorkerKilledMidJob(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	const n = 60
	ps := make([]queues.EnqueueParams, n)
	for i := range ps {
		ps[i] = queues.EnqueueParams{Queue: "crash", Kind: "sleep", Payload: map[string]int{"ms": 300}}
	}
	_, err := queues.EnqueueManyTx(ctx, pool, ps)
	require.NoError(t, err)

	first := startWorker(t, url, "--queues crash --concurrency 6 --lease 2s --poll 100ms")
	count := func(q string) int {
		var c int
		require.NoError(t, pool.QueryRow(ctx, q).Scan(&c))
		return c
	}
	require.Eventually(t, func() bool {
		return count("SELECT count(*) FROM jobs WHERE status = 'running'") > 0 &&
			count("SELECT count(*) FROM jobs WHERE status = 'done'") > 0
	}, 60*time.Second, 20*time.Millisecond, "the first worker never got going")
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	orphaned := count("SELECT count(*) FROM jobs WHERE status = 'running'")
	require.Positive(t, orphaned, "the kill must leave jobs mid-run")

	startWorker(t, url, "--queues crash --concurrency 6 --lease 2s --poll 100ms")
	require.Eventually(t, func() bool {
		return count("SELECT count(*) FROM jobs WHERE status = 'done'") == n
	}, 90*time.Second, 100*time.Millisecond, "not every job completed after the restart")
	require.Zero(t, count("SELECT count(*) FROM jobs WHERE status <> 'done'"))
	retried := count("SELECT count(*) FROM jobs WHERE attempts > 1")
	require.GreaterOrEqual(t, retried, orphaned, "the killed attempts are counted")
	require.Zero(t, count(`SELECT count(*) FROM jobs WHERE attempts > 1
		AND NOT errors::text LIKE '%lease%'`), "a retried job's history says its lease expired")
}

// TestThrottleAcrossWorkerProcesses: two `console worker` processes run a
// queue at concurrency 8 each; queue.throttle to 2 through the audited
// action is obeyed fleet-wide: after one poll interval the jobs running
// at once never exceed 2.
func TestThrottleAcrossWorkerProcesses(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	const n = 400
	ps := make([]queues.EnqueueParams, n)
	for i := range ps {
		ps[i] = queues.EnqueueParams{Queue: "throttled", Kind: "sleep", Payload: map[string]int{"ms": 150}}
	}
	_, err := queues.EnqueueManyTx(ctx, pool, ps)
	require.NoError(t, err)
	running := func() int {
		var c int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'throttled' AND status = 'running'").Scan(&c))
		return c
	}
	for i := 0; i < 2; i++ {
		startWorker(t, url, "--queues throttled --concurrency 8 --poll 100ms")
	}
	require.Eventually(t, func() bool { return running() > 2 }, 60*time.Second, 10*time.Millisecond,
		"the two workers never ran more than 2 jobs at once before the throttle")

	runner, err := actions.NewRunner(pool, actions.RunnerConfig{})
	require.NoError(t, err)
	_, err = runner.Run(ctx, actions.Actor{Name: "olga", Role: auth.RoleOperator}, "queue.throttle",
		actions.Request{Params: map[string]any{"queue": "throttled", "max_workers": 2}, Reason: "downstream at capacity"})
	require.NoError(t, err)

	// Running jobs finish (they are not killed); within one poll interval
	// plus the longest job the fleet is at the limit, and stays there.
	require.Eventually(t, func() bool { return running() <= 2 }, 10*time.Second, 10*time.Millisecond)
	var done0 int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'throttled' AND status = 'done'").Scan(&done0))
	for samples := 0; samples < 300; samples++ {
		require.LessOrEqual(t, running(), 2, "in-flight above the fleet-wide limit")
		time.Sleep(10 * time.Millisecond)
	}
	var done1 int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'throttled' AND status = 'done'").Scan(&done1))
	require.Greater(t, done1, done0, "the throttled queue keeps moving")
}
