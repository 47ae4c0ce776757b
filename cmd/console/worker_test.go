package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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

// enqueueSleeps enqueues n jobs of the demo kind sleep in queue, job i
// sleeping ms(i) milliseconds.
func enqueueSleeps(t *testing.T, pool *pgxpool.Pool, queue string, n int, ms func(i int) int) {
	t.Helper()
	ps := make([]queues.EnqueueParams, n)
	for i := range ps {
		ps[i] = queues.EnqueueParams{Queue: queue, Kind: "sleep", Payload: map[string]int{"ms": ms(i)}}
	}
	_, err := queues.EnqueueManyTx(context.Background(), pool, ps)
	require.NoError(t, err)
}

// TestWorkerKilledMidJob: a `console worker` process is killed with SIGKILL
// while it runs jobs; a second worker takes the jobs over once their leases
// expire, and every job completes exactly once, none lost, with the killed
// attempt counted.
func TestWorkerKilledMidJob(t *testing.T) {
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	const n = 60
	// Staggered run times, so the running jobs never all end at once and
	// leave a moment with none running.
	enqueueSleeps(t, pool, "crash", n, func(i int) int { return 200 + 100*(i%6) })

	first := startWorker(t, url, "--queues crash --concurrency 6 --lease 2s --poll 100ms")
	count := func(q string) int { return countRows(t, pool, q) }
	require.Eventually(t, func() bool {
		// Kill it early, while most jobs are still to run: a worker that
		// has claimed its last jobs may finish them before the signal.
		done := count("SELECT count(*) FROM jobs WHERE status = 'done'")
		return count("SELECT count(*) FROM jobs WHERE status = 'running'") > 0 && done > 0 && done < n/2
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
	enqueueSleeps(t, pool, "throttled", 400, func(int) int { return 150 })
	running := func() int {
		return countRows(t, pool, "SELECT count(*) FROM jobs WHERE queue = 'throttled' AND status = 'running'")
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
	done := func() int {
		return countRows(t, pool, "SELECT count(*) FROM jobs WHERE queue = 'throttled' AND status = 'done'")
	}
	done0 := done()
	for samples := 0; samples < 300; samples++ {
		require.LessOrEqual(t, running(), 2, "in-flight above the fleet-wide limit")
		time.Sleep(10 * time.Millisecond)
	}
	require.Greater(t, done(), done0, "the throttled queue keeps moving")
}

// startWorkerPair enqueues n ten-minute jobs in queue on a fresh database,
// starts a worker (concurrency n, lease as given) and waits until it holds
// every job with its session recorded, then starts a second, idle, worker
// on the same queue. It returns a pool on the database and the first
// worker's process.
func startWorkerPair(t *testing.T, queue string, n int, lease string) (*pgxpool.Pool, *exec.Cmd) {
	t.Helper()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	enqueueSleeps(t, pool, queue, n, func(int) int { return 600_000 })
	args := fmt.Sprintf("--queues %s --concurrency %d --lease %s --poll 100ms", queue, n, lease)
	first := startWorker(t, url, args)
	require.Eventually(t, func() bool {
		return countRows(t, pool, `SELECT count(*) FROM jobs j JOIN workers w ON w.id = j.lease_owner
			WHERE j.status = 'running' AND w.backend_pid IS NOT NULL`) == n
	}, 60*time.Second, 20*time.Millisecond, "the first worker never held every job with its session recorded")
	startWorker(t, url, args)
	require.Eventually(t, func() bool {
		return countRows(t, pool, "SELECT count(*) FROM workers WHERE backend_pid IS NOT NULL") == 2
	},
		60*time.Second, 20*time.Millisecond, "the second worker never started")
	return pool, first
}

// countRows runs q, a count(*) query, on pool.
func countRows(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var c int
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&c))
	return c
}

// TestWorkerKilledJobsBackInSeconds: a worker holding running jobs under a
// 60s lease is killed with SIGKILL; its session disappears with it, so a
// second worker finds it dead and runs its jobs again within seconds, long
// before the leases would have expired.
func TestWorkerKilledJobsBackInSeconds(t *testing.T) {
	ctx := context.Background()
	const n = 8
	pool, first := startWorkerPair(t, "dead", n, "60s")
	count := func(q string, args ...any) int { return countRows(t, pool, q, args...) }

	killed := time.Now()
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	require.Eventually(t, func() bool {
		return count("SELECT count(*) FROM jobs WHERE status = 'running' AND attempts = 2") == n
	}, 30*time.Second, 20*time.Millisecond, "the killed worker's jobs did not run again before their 60s leases")
	t.Logf("a SIGKILLed worker's %d jobs were running again elsewhere %s after the kill (lease 60s)", n, time.Since(killed).Round(10*time.Millisecond))

	ws, err := queues.WorkerList(ctx, pool)
	require.NoError(t, err)
	reclaimed := 0
	for _, w := range ws {
		if w.PID == first.Process.Pid {
			require.NotNil(t, w.ReclaimedAt, "the read API says when the dead worker's jobs were reclaimed")
			require.Equal(t, n, w.ReclaimedJobs)
			require.NotNil(t, w.StoppedAt)
			reclaimed++
		} else {
			require.Nil(t, w.ReclaimedAt)
		}
	}
	require.Equal(t, 1, reclaimed)
	require.Equal(t, n, count(`SELECT count(*) FROM jobs WHERE errors->0->>'class' = 'worker_died'`),
		"each job's history says its worker died")
}

// TestWorkerStoppedKeepsLeases: a worker paused with SIGSTOP is alive (its
// session stays on the server) though its heartbeat stops: its jobs keep
// their leases until they really expire, and only the reaper takes them.
func TestWorkerStoppedKeepsLeases(t *testing.T) {
	ctx := context.Background()
	const n = 4
	pool, first := startWorkerPair(t, "paused", n, "8s")
	count := func(q string, args ...any) int { return countRows(t, pool, q, args...) }

	require.NoError(t, first.Process.Signal(syscall.SIGSTOP))
	defer first.Process.Signal(syscall.SIGCONT)
	var stoppedAt time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&stoppedAt))
	require.Eventually(t, func() bool {
		return count("SELECT count(*) FROM jobs WHERE status = 'running' AND attempts = 2") == n
	}, 60*time.Second, 50*time.Millisecond, "the paused worker's jobs never moved after their leases expired")

	var firstID string
	require.NoError(t, pool.QueryRow(ctx, "SELECT id FROM workers WHERE pid = $1", first.Process.Pid).Scan(&firstID))
	require.Zero(t, count("SELECT count(*) FROM workers WHERE reclaimed_at IS NOT NULL"),
		"a paused worker's session is alive: it is not dead")
	require.Equal(t, n, count(`SELECT count(*) FROM jobs WHERE errors->0->>'class' = 'lease_expired'`),
		"the jobs moved because their leases expired")
	// The lease was renewed until the stop: it expired no sooner than a
	// full lease after it.
	require.Zero(t, count(`SELECT count(*) FROM jobs
		WHERE (errors->0->>'at')::timestamptz < $1::timestamptz + interval '8 seconds' - interval '3 seconds'`, stoppedAt),
		"a lease was taken before it expired")
}
