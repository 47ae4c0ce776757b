package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/metricsum"
	"github.com/pgconsole/console/internal/testdb"
)

// testConfig is a ClientConfig with intervals short enough for tests.
func testConfig(queues map[string]QueueConfig) ClientConfig {
	return ClientConfig{
		Queues:        queues,
		PollInterval:  50 * time.Millisecond,
		LeaseDuration: 2 * time.Second,
		RetryBase:     5 * time.Millisecond,
		RetryMax:      20 * time.Millisecond,
		ShutdownGrace: 2 * time.Second,
	}
}

// startClient starts a client and stops it at cleanup.
func startClient(t *testing.T, pool *pgxpool.Pool, cfg ClientConfig, register func(*Client)) *Client {
	t.Helper()
	c, err := NewClient(pool, cfg)
	require.NoError(t, err)
	if register != nil {
		register(c)
	}
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Stop(ctx)
	})
	return c
}

// waitListening waits until the one client on pool has its listener
// connected: the listener records its session right after LISTEN.
func waitListening(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	testdb.Eventually(t, 10*time.Second, "listener connected", func() bool {
		var n int
		require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM workers WHERE backend_pid IS NOT NULL").Scan(&n))
		return n == 1
	})
}

func countJobs(t *testing.T, db DBTX, where string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.QueryRow(context.Background(), "SELECT count(*) FROM jobs WHERE "+where, args...).Scan(&n))
	return n
}

func TestClientOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"b": {Concurrency: 4, Timeout: 300 * time.Millisecond}})
	cfg.Registerer = reg
	startClient(t, pool, cfg, func(c *Client) {
		registerTestKinds(c)
		c.Handle("permanent", func(context.Context, *Job) error { return Permanent(errors.New("bad input 42")) })
	})
	enq := func(kind string, payload any, maxAttempts int) int64 {
		j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "b", Kind: kind, Payload: payload, MaxAttempts: maxAttempts})
		require.NoError(t, err)
		return j.ID
	}
	noop := enq("noop", nil, 0)
	flaky := enq("fail", map[string]int{"times": 2}, 5)
	always := enq("fail", map[string]int{"times": -1}, 3)
	panics := enq("panic", nil, 2)
	slow := enq("sleep", map[string]int{"ms": 60_000}, 1)
	perm := enq("permanent", nil, 5)
	unknown := enq("nobody-handles-this", nil, 1)

	testdb.Eventually(t, 20*time.Second, "every job finished", func() bool {
		return countJobs(t, pool, "queue = 'b' AND status IN ('ready', 'running')") == 0
	})
	get := func(id int64) *Job {
		j, err := JobGet(ctx, pool, id)
		require.NoError(t, err)
		return j
	}
	require.Equal(t, StatusDone, get(noop).Status)
	j := get(flaky)
	require.Equal(t, StatusDone, j.Status)
	require.Equal(t, 3, j.Attempts)
	hist, _ := j.AttemptErrors()
	require.Len(t, hist, 2)

	j = get(always)
	require.Equal(t, StatusDead, j.Status)
	require.Equal(t, 3, j.Attempts)
	require.Equal(t, "attempt ? of job ?: test fail kind", *j.ErrorClass)

	j = get(panics)
	require.Equal(t, StatusDead, j.Status)
	require.Equal(t, "panic", *j.ErrorClass)
	require.Equal(t, 2, j.Attempts)
	require.Contains(t, *j.LastError, "test panic kind")

	j = get(slow)
	require.Equal(t, StatusDead, j.Status)
	require.Equal(t, "timeout", *j.ErrorClass)

	j = get(perm)
	require.Equal(t, StatusDead, j.Status)
	require.Equal(t, 1, j.Attempts, "permanent errors are not retried")
	require.Equal(t, "bad input ?", *j.ErrorClass)

	j = get(unknown)
	require.Equal(t, StatusDead, j.Status)
	require.Contains(t, *j.LastError, "no handler")

	require.Equal(t, 2.0, testutil.ToFloat64(testutilCounter(reg, "queues_handler_panics_total")))
	require.GreaterOrEqual(t, testutil.ToFloat64(testutilCounter(reg, "queues_dead_letters_total")), 5.0)
	// The two jobs that succeeded were acked while their leases were held.
	require.Equal(t, 2.0, finishedCount(t, reg, StatusDone))
	require.Zero(t, finishedCount(t, reg, "lease_lost"))
}

// finishedCount is queues_jobs_finished_total for one result, summed over
// queues.
func finishedCount(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	n, err := metricsum.Counter(reg, "queues_jobs_finished_total", "result", result)
	require.NoError(t, err)
	return n
}

// testutilCounter gathers one counter family summed over labels.
func testutilCounter(reg *prometheus.Registry, name string) prometheus.Collector {
	return prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, _ := reg.Gather()
		sum := 0.0 // a vector with no series yet is not gathered at all: 0
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
		ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "sum", nil, nil), prometheus.CounterValue, sum)
	})
}

// TestJobOfApplicationName: the job id comes back from the tag JobConn
// sets, and from no other session's name.
func TestJobOfApplicationName(t *testing.T) {
	id := JobOfApplicationName(JobApplicationName(123))
	require.NotNil(t, id)
	require.EqualValues(t, 123, *id)
	id = JobOfApplicationName("console-worker shard=2 job=7")
	require.NotNil(t, id, "other words may come between")
	require.EqualValues(t, 7, *id)
	for _, app := range []string{"", "console-worker", "console-worker job=abc", "console-workers job=5",
		"psql job=5", "river job=5", "job=5"} {
		require.Nil(t, JobOfApplicationName(app), "%q runs no engine job", app)
	}
	id = TaggedJob("river job=42", "river")
	require.NotNil(t, id)
	require.EqualValues(t, 42, *id)
}

func TestJobConnTaggedAndCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	type seen struct {
		pid int
		id  int64
	}
	started := make(chan seen, 1)
	returned := make(chan error, 1)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"tag": {Concurrency: 2}})
	cfg.Registerer = reg
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("block", func(ctx context.Context, j *Job) error {
			conn, err := JobConn(ctx)
			if err != nil {
				return err
			}
			var pid int
			if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return err
			}
			started <- seen{pid, j.ID}
			<-ctx.Done()
			returned <- context.Cause(ctx)
			return ctx.Err()
		})
	})
	j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "tag", Kind: "block"})
	require.NoError(t, err)
	var s seen
	select {
	case s = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job did not start")
	}
	require.Equal(t, j.ID, s.id)
	var app string
	require.NoError(t, pool.QueryRow(ctx, "SELECT application_name FROM pg_stat_activity WHERE pid = $1", s.pid).Scan(&app))
	require.Equal(t, fmt.Sprintf("console-worker job=%d", j.ID), app)
	require.Equal(t, &j.ID, JobOfApplicationName(app), "the console reads the job back from the tag")

	// An operator cancels the running job: the heartbeat notices the lost
	// lease and cancels the handler; the job stays dead.
	_, err = JobCancelTx(ctx, pool, j.ID)
	require.NoError(t, err)
	select {
	case cause := <-returned:
		require.ErrorIs(t, cause, ErrLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("handler was not cancelled")
	}
	testdb.Eventually(t, 5*time.Second, "session untagged", func() bool {
		return countTagged(t, pool) == 0
	})
	got, err := JobGet(ctx, pool, j.ID)
	require.NoError(t, err)
	require.Equal(t, StatusDead, got.Status)
	require.Equal(t, "cancelled", *got.ErrorClass)
	testdb.Eventually(t, 5*time.Second, "the refused ack counted", func() bool {
		return testutil.ToFloat64(testutilCounter(reg, "queues_stale_acks_total")) == 1
	})
}

func countTagged(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'console-worker job=%' AND datname = current_database()").Scan(&n))
	return n
}

// TestConcurrencyExactlyOnce runs 10,000 jobs through 8 workers in two
// clients on two pools (two "processes") and checks every job was done
// exactly once, both by the handler's own count and in SQL.
func TestConcurrencyExactlyOnce(t *testing.T) {
	testdb.SkipShort(t, "10,000 jobs through two clients")
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	const n = 10_000
	ps := slices.Repeat([]EnqueueParams{{Queue: "cc", Kind: "count"}}, n)
	setup := testdb.Pool(t, url)
	_, err := EnqueueCopy(ctx, setup, ps)
	require.NoError(t, err)
	var minID int64
	require.NoError(t, setup.QueryRow(ctx, "SELECT min(id) FROM jobs").Scan(&minID))

	runs := make([]atomic.Int32, n)
	var total atomic.Int64
	handler := func(_ context.Context, j *Job) error {
		runs[j.ID-minID].Add(1)
		total.Add(1)
		return nil
	}
	start := time.Now()
	for i := range 2 {
		cfg := testConfig(map[string]QueueConfig{"cc": {Concurrency: 4}})
		cfg.ID = fmt.Sprintf("proc-%d", i)
		cfg.LeaseDuration = 30 * time.Second
		startClient(t, testdb.Pool(t, url), cfg, func(c *Client) { c.Handle("count", handler) })
	}
	testdb.Eventually(t, 60*time.Second, "all jobs done", func() bool {
		return countJobs(t, setup, "status = 'done'") == n
	})
	t.Logf("%d jobs in %s with 2x4 workers (%.0f jobs/s)", n, time.Since(start), n/time.Since(start).Seconds())
	for i := range runs {
		require.EqualValues(t, 1, runs[i].Load(), "job %d ran %d times", minID+int64(i), runs[i].Load())
	}
	require.EqualValues(t, n, total.Load())
	require.EqualValues(t, n, countJobs(t, setup, "status = 'done' AND attempts = 1 AND lease_owner IS NULL AND finished_at IS NOT NULL"))
}

// TestThrottledClaimNeedsTheLock: on a queue with max_workers a claim
// that has not taken the queue's claim lock (its client has not yet read
// the throttle) claims nothing, plain or fair; with the lock it claims up
// to the limit. Two unlocked claims side by side would each count the
// other's jobs as not yet running and together pass the limit.
func TestThrottledClaimNeedsTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := EnqueueCopy(ctx, pool, slices.Repeat([]EnqueueParams{{Queue: "lk", Kind: "k", TenantID: "a"}}, 10))
	require.NoError(t, err)
	two := 2
	_, err = QueueSettingsSetTx(ctx, pool, QueueSettings{Queue: "lk", MaxWorkers: &two})
	require.NoError(t, err)
	for _, fair := range []bool{false, true} {
		p := JobClaimParams{Queue: "lk", Limit: 10, Owner: "w", Lease: time.Minute, Fair: fair}
		jobs, err := JobClaim(ctx, pool, p)
		require.NoError(t, err)
		require.Empty(t, jobs, "fair %v: an unlocked claim took jobs from a throttled queue", fair)
	}
	jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: "lk", Limit: 10, Owner: "w", Lease: time.Minute, Throttled: true})
	require.NoError(t, err)
	require.Len(t, jobs, 2, "a locked claim takes up to max_workers")
}

// TestThrottleAndPause lowers max_workers from 8 to 2 under load across two
// clients, checks that in-flight never exceeds 2 once the jobs already
// running have finished, raises it again, then pauses and resumes.
func TestThrottleAndPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	admin := testdb.Pool(t, url)
	const jobTime = 20 * time.Millisecond
	ps := slices.Repeat([]EnqueueParams{{Queue: "th", Kind: "work"}}, 3000)
	_, err := EnqueueCopy(ctx, admin, ps)
	require.NoError(t, err)
	eight, two := 8, 2
	_, err = QueueSettingsSetTx(ctx, admin, QueueSettings{Queue: "th", MaxWorkers: &eight})
	require.NoError(t, err)

	var inFlight, peak atomic.Int64
	var finished atomic.Int64
	handler := func(ctx context.Context, _ *Job) error {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		t := time.NewTimer(jobTime)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		inFlight.Add(-1)
		finished.Add(1)
		return nil
	}
	const poll = 100 * time.Millisecond
	for i := range 2 {
		cfg := testConfig(map[string]QueueConfig{"th": {Concurrency: 8}})
		cfg.PollInterval = poll
		cfg.ID = fmt.Sprintf("th-%d", i)
		startClient(t, testdb.Pool(t, url), cfg, func(c *Client) { c.Handle("work", handler) })
	}
	testdb.Eventually(t, 20*time.Second, "8 in flight", func() bool { return inFlight.Load() >= 8 })
	require.LessOrEqual(t, peak.Load(), int64(8), "max_workers 8 across two clients of 8")

	_, err = QueueSettingsSetTx(ctx, admin, QueueSettings{Queue: "th", MaxWorkers: &two})
	require.NoError(t, err)
	lowered := time.Now()
	testdb.Eventually(t, 10*time.Second, "in-flight down to 2", func() bool {
		return inFlight.Load() <= 2 && countJobs(t, admin, "queue = 'th' AND status = 'running'") <= 2
	})
	took := time.Since(lowered)
	t.Logf("throttle 8 -> 2 observed after %s (poll interval %s, job time %s)", took, poll, jobTime)
	require.Less(t, took, poll+jobTime+2*time.Second)
	peak.Store(inFlight.Load())
	base := finished.Load()
	testdb.Eventually(t, 20*time.Second, "100 jobs under the new limit", func() bool { return finished.Load() >= base+100 })
	require.LessOrEqual(t, peak.Load(), int64(2), "in-flight exceeded max_workers after throttling")

	// Raising the limit takes effect without a restart.
	_, err = QueueSettingsSetTx(ctx, admin, QueueSettings{Queue: "th", MaxWorkers: &eight})
	require.NoError(t, err)
	testdb.Eventually(t, 10*time.Second, "more than 2 in flight again", func() bool { return inFlight.Load() > 2 })

	// Pause: in-flight drains to 0 and the ready count stops moving for
	// several poll intervals (seen through both workers' heartbeats).
	_, err = QueueSettingsSetTx(ctx, admin, QueueSettings{Queue: "th", Paused: true})
	require.NoError(t, err)
	testdb.Eventually(t, 10*time.Second, "paused queue drained", func() bool {
		return countJobs(t, admin, "queue = 'th' AND status = 'running'") == 0
	})
	ready := countJobs(t, admin, "queue = 'th' AND status = 'ready'")
	require.Positive(t, ready)
	var since time.Time
	require.NoError(t, admin.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&since))
	testdb.Eventually(t, 10*time.Second, "both workers heartbeat 3 poll intervals later", func() bool {
		var n int
		require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM workers WHERE last_seen_at > $1::timestamptz + $2::interval",
			since, (3*poll).String()).Scan(&n))
		return n == 2
	})
	require.Equal(t, ready, countJobs(t, admin, "queue = 'th' AND status = 'ready'"), "a paused queue claimed jobs")
	require.Zero(t, inFlight.Load())

	_, err = QueueSettingsSetTx(ctx, admin, QueueSettings{Queue: "th", Paused: false})
	require.NoError(t, err)
	testdb.Eventually(t, 10*time.Second, "resumed", func() bool {
		return countJobs(t, admin, "queue = 'th' AND status = 'ready'") < ready
	})

	ws, err := WorkerList(ctx, admin, 0)
	require.NoError(t, err)
	require.Len(t, ws, 2)
	for _, w := range ws {
		require.Equal(t, []string{"th"}, w.Queues)
		require.True(t, w.Alive)
		require.Equal(t, 8, w.Concurrency)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	rate := 20.0
	_, err := QueueSettingsSetTx(ctx, pool, QueueSettings{Queue: "rl", RatePerSecond: &rate})
	require.NoError(t, err)
	ps := slices.Repeat([]EnqueueParams{{Queue: "rl", Kind: "noop"}}, 200)
	_, err = EnqueueManyTx(ctx, pool, ps)
	require.NoError(t, err)
	startClient(t, pool, testConfig(map[string]QueueConfig{"rl": {Concurrency: 8}}), func(c *Client) {
		registerTestKinds(c)
	})
	testdb.Eventually(t, 20*time.Second, "10 jobs done", func() bool { return countJobs(t, pool, "status = 'done'") >= 10 })
	var first time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT min(started_at) FROM jobs").Scan(&first))
	testdb.Eventually(t, 20*time.Second, "30 jobs done", func() bool { return countJobs(t, pool, "status = 'done'") >= 30 })
	// Rate caps the claims: in any window of w seconds at most 20*w + burst
	// jobs start. Checked on the database's own timestamps.
	var n int64
	var span float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), extract(epoch FROM max(started_at) - min(started_at))
		FROM jobs WHERE status = 'done'`).Scan(&n, &span))
	require.LessOrEqual(t, float64(n), rate*span+rate+1, "started %d jobs in %.2fs at rate %.0f/s", n, span, rate)
}

func TestClientEnqueueAndWake(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	cfg := testConfig(map[string]QueueConfig{"w": {Concurrency: 2}})
	cfg.PollInterval = time.Hour // only NOTIFY can wake the fetcher
	done := make(chan int64, 1)
	c := startClient(t, pool, cfg, func(c *Client) {
		c.Handle("hi", func(_ context.Context, j *Job) error {
			var p struct{ N int64 }
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return err
			}
			done <- p.N
			return nil
		})
	})
	// Wait for the listener: the first poll ran at start, so only a
	// notification can deliver a job enqueued later.
	waitListening(t, pool)
	_, err := c.Enqueue(ctx, EnqueueParams{Queue: "w", Kind: "hi", Payload: map[string]int64{"n": 7}})
	require.NoError(t, err)
	select {
	case n := <-done:
		require.EqualValues(t, 7, n)
	case <-time.After(10 * time.Second):
		t.Fatal("NOTIFY did not wake the worker")
	}
}

// TestClaimRescan: while a backlog is worked the claims resume after the
// last job they took, so a job that becomes ready behind that cursor (here
// a higher priority) is found when the claims restart from the head: after
// ClaimRescan, not at the end of the backlog. With a rescan longer than the
// run it waits for the backlog to drain, which shows the claims really do
// resume after the cursor.
func TestClaimRescan(t *testing.T) {
	t.Parallel()
	const backlog = 3000
	for _, tc := range []struct {
		name   string
		rescan time.Duration
		check  func(t *testing.T, handledBefore int64)
	}{
		{"Short", 20 * time.Millisecond, func(t *testing.T, before int64) {
			require.Less(t, before, int64(backlog-500), "the high-priority job waited for most of the backlog")
		}},
		{"Long", time.Hour, func(t *testing.T, before int64) {
			require.Greater(t, before, int64(backlog-50), "the claims did not resume after their cursor")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := testdb.New(t)
			ps := slices.Repeat([]EnqueueParams{{Queue: "rs", Kind: "low"}}, backlog)
			_, err := EnqueueCopy(ctx, pool, ps)
			require.NoError(t, err)
			var handled atomic.Int64
			highAt := make(chan int64, 1)
			cfg := testConfig(map[string]QueueConfig{"rs": {Concurrency: 10}})
			cfg.MaxClaim = 10
			cfg.ClaimRescan = tc.rescan
			startClient(t, pool, cfg, func(c *Client) {
				c.Handle("low", func(context.Context, *Job) error {
					time.Sleep(time.Millisecond)
					handled.Add(1)
					return nil
				})
				c.Handle("high", func(context.Context, *Job) error {
					highAt <- handled.Load()
					return nil
				})
			})
			testdb.Eventually(t, 30*time.Second, "the first jobs", func() bool { return handled.Load() >= 100 })
			_, err = EnqueueTx(ctx, pool, EnqueueParams{Queue: "rs", Kind: "high", Priority: 9})
			require.NoError(t, err)
			select {
			case before := <-highAt:
				t.Logf("the high-priority job ran after %d of %d jobs", before, backlog)
				tc.check(t, before)
			case <-time.After(60 * time.Second):
				t.Fatal("the high-priority job never ran")
			}
		})
	}
}
