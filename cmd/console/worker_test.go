package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// startWorker runs `console worker` as a child process (the test binary
// re-executed as main) against url.
func startWorker(t *testing.T, url string, args string) *exec.Cmd {
	t.Helper()
	cmd, _ := startWorkerOutput(t, url, args)
	return cmd
}

// startWorkerOutput is startWorker that also returns the worker's stdout
// and stderr, to read once the process has been waited for.
func startWorkerOutput(t *testing.T, url string, args string) (*exec.Cmd, *logbuf.Buffer) {
	t.Helper()
	return startConsoleOutput(t, url, "worker "+args)
}

// startConsoleOutput starts the console binary with args (a command and
// its flags) on url; its output is collected (safe to read while it runs),
// and logged when the test fails.
func startConsoleOutput(t *testing.T, url string, args string) (*exec.Cmd, *logbuf.Buffer) {
	t.Helper()
	testdb.SkipShort(t, "a console process of its own")
	cmd := exec.Command(os.Args[0])
	out := &logbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "CONSOLE_TEST_MAIN=1", "CONSOLE_TEST_ARGS="+args, "DATABASE_URL="+url)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("console %s output:\n%s", strings.Fields(args)[0], out.String())
		}
	})
	return cmd, out
}

// exitOnSIGTERM sends SIGTERM to the process cmd started and returns how
// it exited; what names it in the failure when it has not within 60s.
func exitOnSIGTERM(t *testing.T, cmd *exec.Cmd, what string) error {
	t.Helper()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not exit within 60s of SIGTERM", what)
		return nil
	}
}

// sleepJobs creates a fresh database and enqueues n sleep jobs in queue
// there, job i sleeping ms(i) milliseconds. It returns the database's URL,
// a pool on it and the jobs' ids in order.
func sleepJobs(t *testing.T, queue string, n int, ms func(i int) int) (string, *pgxpool.Pool, []int64) {
	t.Helper()
	return queuedJobs(t, queue, "sleep", n, func(i int) any { return map[string]int{"ms": ms(i)} })
}

// queuedJobs creates a fresh database and enqueues n jobs of kind in queue
// there, job i with payload(i). It returns the database's URL, a pool on
// it and the jobs' ids in order.
func queuedJobs(t *testing.T, queue, kind string, n int, payload func(i int) any) (string, *pgxpool.Pool, []int64) {
	t.Helper()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	ps := make([]queues.EnqueueParams, n)
	for i := range ps {
		ps[i] = queues.EnqueueParams{Queue: queue, Kind: kind, Payload: payload(i)}
	}
	ids, err := queues.EnqueueManyTx(context.Background(), pool, ps)
	require.NoError(t, err)
	slices.Sort(ids)
	return url, pool, ids
}

// TestWorkerSIGTERMDrain: on SIGTERM `console worker` lets its running jobs
// finish within --drain. When they all do, it exits 0. When the deadline
// cuts them short, it releases them (ready again, the attempt counted),
// writes one log line saying how many and which ids, and exits 1 so the
// supervisor knows the drain was incomplete.
//
// The jobs are sql jobs sleeping in the database, so the test can see
// their handlers running (in pg_stat_activity) before it signals: a job
// whose claim has committed but whose handler has not started yet is
// rightly handed back unstarted, which is a different path.
func TestWorkerSIGTERMDrain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		seconds  int
		drain    string
		complete bool
	}{{"Complete", 5, "60s", true}, {"DeadlineCut", 600, "1s", false}} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			statement := fmt.Sprintf("SELECT pg_sleep(%d) /* drain drill */", tc.seconds)
			url, pool, ids := queuedJobs(t, "term", "sql", n, func(int) any { return map[string]string{"statement": statement} })
			w, out := startWorkerOutput(t, url, "--queues term --concurrency 4 --poll 100ms --allow-sql-jobs --drain "+tc.drain)
			require.Eventually(t, func() bool {
				return countRows(t, pool, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = $1", statement) == n
			}, 60*time.Second, 10*time.Millisecond, "the worker never ran the jobs' handlers")

			werr := exitOnSIGTERM(t, w, "the worker")
			var lines []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.Contains(l, `"drain deadline interrupted jobs"`) {
					lines = append(lines, l)
				}
			}
			if tc.complete {
				require.NoError(t, werr, "a complete drain exits 0")
				require.Empty(t, lines)
				require.Equal(t, n, countRows(t, pool, "SELECT count(*) FROM jobs WHERE status = 'done'"))
				return
			}
			var ee *exec.ExitError
			require.ErrorAs(t, werr, &ee, "an incomplete drain exits non-zero")
			require.Equal(t, 1, ee.ExitCode())
			require.Contains(t, out.String(), "worker stopped before its jobs finished")
			require.Len(t, lines, 1, "one log line says what the deadline interrupted")
			var line struct {
				Released    int     `json:"released"`
				ReleasedIDs []int64 `json:"released_ids"`
			}
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &line), lines[0])
			require.Equal(t, n, line.Released)
			require.Equal(t, ids, line.ReleasedIDs)
			require.Equal(t, n, countRows(t, pool,
				"SELECT count(*) FROM jobs WHERE status = 'ready' AND attempts = 1 AND lease_owner IS NULL"),
				"the interrupted jobs are released with their attempt counted")
		})
	}
}

// TestWorkerSIGTERMWhileStarting: a SIGTERM that lands while `console
// worker` starts (here its registration waits for a lock another session
// holds on workers) stops it cleanly: exit 0, a line saying no job was
// claimed, and the queue's job untouched.
func TestWorkerSIGTERMWhileStarting(t *testing.T) {
	url, pool, ids := sleepJobs(t, "early", 1, func(int) int { return 10 })
	release := testdb.HoldLock(t, url, "workers")
	w, out := startWorkerOutput(t, url, "--queues early --poll 100ms")
	testdb.WaitBackend(t, pool, "console-worker", "wait_event_type = 'Lock'")
	require.NoError(t, exitOnSIGTERM(t, w, "the worker"), "a worker stopped while starting exits 0")
	require.Contains(t, out.String(), "stopped before the workers started; no job was claimed")
	release()
	require.Equal(t, 1, countRows(t, pool, "SELECT count(*) FROM jobs WHERE id = $1 AND status = 'ready' AND attempts = 0", ids[0]))
}

// TestWorkerKilledMidJob: a `console worker` process is killed with SIGKILL
// while it runs jobs; a second worker takes the jobs over once their leases
// expire, and every job completes exactly once, none lost, with the killed
// attempt counted.
func TestWorkerKilledMidJob(t *testing.T) {
	ctx := context.Background()
	const n = 60
	// Staggered run times, so the running jobs never all end at once and
	// leave a moment with none running.
	url, pool, _ := sleepJobs(t, "crash", n, func(i int) int { return 200 + 100*(i%6) })
	// done_log gets a row in the very transaction of every completion.
	_, err := pool.Exec(ctx, `CREATE TABLE done_log (job_id bigint NOT NULL, attempts integer NOT NULL);
		CREATE FUNCTION done_log() RETURNS trigger LANGUAGE plpgsql AS
			$$BEGIN INSERT INTO done_log VALUES (NEW.id, NEW.attempts); RETURN NULL; END$$;
		CREATE TRIGGER done_log AFTER UPDATE OF status ON jobs
			FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION done_log();`)
	require.NoError(t, err)

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
	// A statement the worker sent just before it died still runs to its
	// end: look once its sessions are gone.
	require.Eventually(t, func() bool {
		return count(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE 'console-worker%'`) == 0
	}, 30*time.Second, 20*time.Millisecond, "the killed worker's sessions never ended")
	orphaned := count("SELECT count(*) FROM jobs WHERE status = 'running'")
	require.Positive(t, orphaned, "the kill must leave jobs mid-run")
	_, err = pool.Exec(ctx, `CREATE TABLE at_kill AS SELECT id, status, finished_at FROM jobs`)
	require.NoError(t, err)

	startWorker(t, url, "--queues crash --concurrency 6 --lease 2s --poll 100ms")
	require.Eventually(t, func() bool {
		return count("SELECT count(*) FROM jobs WHERE status = 'done'") == n
	}, 90*time.Second, 100*time.Millisecond, "not every job completed after the restart")
	require.Zero(t, count("SELECT count(*) FROM jobs WHERE status <> 'done'"))
	retried := count("SELECT count(*) FROM jobs WHERE attempts > 1")
	require.GreaterOrEqual(t, retried, orphaned, "the killed attempts are counted")
	require.Zero(t, count(`SELECT count(*) FROM jobs WHERE attempts > 1
		AND NOT errors::text LIKE '%lease%'`), "a retried job's history says its lease expired")

	// Nothing ran twice: every completion committed once; a job done at
	// the kill never ran or finished again; a job ran a second time only
	// when the kill cut its first attempt short.
	require.Equal(t, n, count("SELECT count(DISTINCT job_id) FROM done_log"))
	require.Zero(t, count("SELECT count(*) FROM (SELECT job_id FROM done_log GROUP BY job_id HAVING count(*) > 1) x"),
		"jobs whose completion committed twice")
	require.Zero(t, count(`SELECT count(*) FROM at_kill k JOIN jobs j USING (id)
		WHERE k.status = 'done' AND (j.finished_at IS DISTINCT FROM k.finished_at OR j.attempts > 1)`),
		"jobs done before the kill that ran again")
	require.Zero(t, count(`SELECT count(*) FROM at_kill k JOIN jobs j USING (id)
		WHERE j.attempts > 2 OR (j.attempts = 2 AND k.status <> 'running')`),
		"jobs claimed twice that the killed worker was not running")
}

// TestThrottleAcrossWorkerProcesses: two `console worker` processes run a
// queue at concurrency 8 each; queue.throttle to 2 through the audited
// action is obeyed fleet-wide: after one poll interval the jobs running
// at once never exceed 2.
func TestThrottleAcrossWorkerProcesses(t *testing.T) {
	ctx := context.Background()
	const n = 400
	url, pool, _ := sleepJobs(t, "throttled", n, func(int) int { return 150 })
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
	url, pool, _ := sleepJobs(t, queue, n, func(int) int { return 600_000 })
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

	ws, err := queues.WorkerList(ctx, pool, 0)
	require.NoError(t, err)
	reclaimed := 0
	for _, w := range ws {
		if w.PID == first.Process.Pid {
			require.NotNil(t, w.ReclaimedAt, "the read API says when the dead worker's jobs were reclaimed")
			require.Equal(t, n, w.ReclaimedJobs)
			require.NotNil(t, w.StoppedAt)
			require.False(t, w.SessionOpen)
			reclaimed++
		} else {
			require.Nil(t, w.ReclaimedAt)
			require.True(t, w.SessionOpen, "the live worker's session is on the server")
		}
	}
	require.Equal(t, 1, reclaimed)

	// The expired-leases finding of the queue says its jobs came back early.
	diag, err := diagnostics.Open(ctx, pool.Config().ConnString(), diagnostics.Config{})
	require.NoError(t, err)
	defer diag.Close()
	rep, err := findings.Run(ctx, diag)
	require.NoError(t, err)
	found := false
	for _, f := range rep.Findings {
		if f.Code == findings.CodeExpiredLeases && f.Subject["queue"] == "dead" {
			require.Equal(t, findings.SeverityInfo, f.Severity)
			require.Contains(t, f.Evidence, fmt.Sprintf("pid %d) was found dead at", first.Process.Pid))
			found = true
		}
	}
	require.True(t, found, "no expired-leases finding for queue dead: %v", rep.Findings)
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
	ws, err := queues.WorkerList(ctx, pool, 0)
	require.NoError(t, err)
	for _, w := range ws {
		if w.PID == first.Process.Pid {
			require.True(t, w.SessionOpen, "the paused worker's session stays on the server: the evidence it is alive")
		}
	}
	require.Equal(t, n, count(`SELECT count(*) FROM jobs WHERE errors->0->>'class' = 'lease_expired'`),
		"the jobs moved because their leases expired")
	// The lease was renewed until the stop: it expired no sooner than a
	// full lease after it.
	require.Zero(t, count(`SELECT count(*) FROM jobs
		WHERE (errors->0->>'at')::timestamptz < $1::timestamptz + interval '8 seconds' - interval '3 seconds'`, stoppedAt),
		"a lease was taken before it expired")
}

// TestWorkerGCPercent: the binary collects garbage at a target of 400 unless
// GOGC says otherwise, as its /metrics (go_gc_gogc_percent) shows.
func TestWorkerGCPercent(t *testing.T) {
	url := testdb.URL(t)
	for _, c := range []struct {
		gogc string // "": unset
		want string
	}{{"", "400"}, {"150", "150"}} {
		t.Run("GOGC="+c.gogc, func(t *testing.T) {
			env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") })
			if c.gogc != "" {
				env = append(env, "GOGC="+c.gogc)
			}
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(env, "CONSOLE_TEST_MAIN=1", "CONSOLE_TEST_ARGS=worker --metrics-addr 127.0.0.1:0",
				"DATABASE_URL="+url)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() {
				cmd.Process.Kill()
				cmd.Wait()
			})
			lines := lineChan(stdout)
			metricsRE := regexp.MustCompile(`engine metrics on (http://\S+)`)
			var metricsURL string
			deadline := time.After(60 * time.Second)
			for metricsURL == "" {
				select {
				case line, ok := <-lines:
					require.True(t, ok, "the worker exited before serving its metrics")
					if m := metricsRE.FindStringSubmatch(line); m != nil {
						metricsURL = m[1]
					}
				case <-deadline:
					t.Fatal("the worker did not say where its metrics are within 60s")
				}
			}
			go func() {
				for range lines { // keep the pipe drained
				}
			}()
			resp, err := http.Get(metricsURL)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Regexp(t, `(?m)^go_gc_gogc_percent `+regexp.QuoteMeta(c.want)+`$`, string(body))
		})
	}
}
