package queues

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/internal/testdb"
)

// Environment of TestHelperWorkerProcess when it runs as a child worker.
const (
	helperDBEnv    = "QUEUES_HELPER_DATABASE_URL"
	helperLeaseEnv = "QUEUES_HELPER_LEASE"
)

// TestHelperWorkerProcess is not a test of its own: run as a child process
// with QUEUES_HELPER_DATABASE_URL set, it is a worker process (like
// `console worker`) working queue "crash" until SIGTERM or SIGKILL. Without
// the variable it returns at once.
func TestHelperWorkerProcess(t *testing.T) {
	url := os.Getenv(helperDBEnv)
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg, err := PoolConfig(url)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	lease, err := time.ParseDuration(os.Getenv(helperLeaseEnv))
	require.NoError(t, err)
	c, err := NewClient(pool, ClientConfig{
		Queues:        map[string]QueueConfig{"crash": {Concurrency: 4}},
		PollInterval:  50 * time.Millisecond,
		LeaseDuration: lease,
		ID:            fmt.Sprintf("child-%d", os.Getpid()),
	})
	require.NoError(t, err)
	c.Handle("slow", startLogHandler(pool))
	require.NoError(t, c.Start(ctx))
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Stop(sctx))
}

func startChild(t *testing.T, url string, lease time.Duration) *exec.Cmd {
	t.Helper()
	testdb.SkipShort(t, "a worker process of its own")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorkerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperDBEnv+"="+url, helperLeaseEnv+"="+lease.String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// TestCrashKillNine kills a worker process with SIGKILL mid-job, starts a
// new one, and checks that after lease expiry every job completes, none is
// lost, the killed attempts are counted, and nothing ran twice: a job ran
// again only when the killed worker was running it and had not acked it.
func TestCrashKillNine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	createRunLog(t, pool)
	const n = 30
	ps := slices.Repeat([]EnqueueParams{{Queue: "crash", Kind: "slow", Payload: map[string]int{"ms": 150}}}, n)
	_, err := EnqueueManyTx(ctx, pool, ps)
	require.NoError(t, err)
	// Long enough that a loaded machine's stall of a second or two loses
	// no lease of the live workers (a lost lease rightly runs its job
	// again, which this drill would count against the kill); the killed
	// worker's jobs come back sooner anyway, once its sessions are gone.
	const lease = 5 * time.Second

	first := startChild(t, url, lease)
	testdb.Eventually(t, 60*time.Second, "the first worker to be mid-way", func() bool {
		return countJobs(t, pool, "status = 'done'") >= 5 && countJobs(t, pool, "status = 'running'") > 0
	})
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	_ = first.Wait()
	killedOwner := fmt.Sprintf("child-%d", first.Process.Pid)
	// A statement the worker sent just before it died still runs to its
	// end (a claim may still commit): count once its sessions are gone.
	testdb.Eventually(t, 30*time.Second, "the killed worker's sessions to end", func() bool {
		var sessions int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE $1`, ApplicationName+"%").Scan(&sessions))
		return sessions == 0
	})
	snapshotDurable(t, pool)
	var killed int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status = 'running' AND lease_owner = $1",
		killedOwner).Scan(&killed))
	require.Positive(t, killed, "jobs were running when the worker was killed")
	t.Logf("killed the worker with %d jobs running", killed)

	second := startChild(t, url, lease)
	testdb.Eventually(t, 60*time.Second, "every job done", func() bool {
		return countJobs(t, pool, "status = 'done'") == n
	})
	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "graceful stop of the second worker")
	twice := requireRanOnce(t, pool, n, "(f).owner = $1 AND (s).owner <> $1", killedOwner)
	t.Logf("%d jobs started twice, each interrupted by the kill", twice)

	// Every job is done and ran at least once; the attempts column counts
	// every claim, including the killed ones (a job claimed just before the
	// kill may not have logged its run yet), and each killed attempt is in
	// the errors history as an expired lease.
	var bad, reaped int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs j,
		LATERAL (SELECT count(*) AS runs FROM start_log s WHERE s.job_id = j.id) r
		WHERE r.runs = 0 OR j.attempts NOT IN (r.runs, r.runs + 1)
		   OR (j.attempts = r.runs + 1 AND NOT (j.errors @> '[{"class": "lease_expired"}]'
		                                     OR j.errors @> '[{"class": "worker_died"}]'))`).Scan(&bad))
	require.Zero(t, bad, "attempts must count every run")
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs
		WHERE attempts = 2 AND (errors @> '[{"class": "lease_expired"}]' OR errors @> '[{"class": "worker_died"}]')`).Scan(&reaped))
	require.Equal(t, killed, reaped)
	ws, err := WorkerList(ctx, pool, 0)
	require.NoError(t, err)
	require.Len(t, ws, 2)
	for _, w := range ws {
		if w.PID == first.Process.Pid {
			// A killed worker never marks itself stopped; the process that
			// found it dead (or no one, when the leases expired first) did.
			require.Equal(t, w.StoppedAt != nil, w.ReclaimedAt != nil, "only a reclaim marks a killed worker stopped")
		} else {
			require.NotNil(t, w.StoppedAt, "the gracefully stopped worker marks its row stopped: %+v", w)
			require.False(t, w.Alive, "%+v", w)
		}
	}
}

// TestPostgresRestart restarts PostgreSQL under load, with a fast shutdown
// and with an immediate one (crash recovery at the next start): the
// workers recover by themselves, no job is lost and nothing ran twice: a
// job whose completion had committed never starts again, and a job starts
// a second time only when the restart cut its first attempt short before
// its ack committed. An ack that committed is never logged as stale.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name    string
		restart func(*pgserver.Server, context.Context) error
	}{{"Fast", (*pgserver.Server).Restart}, {"Immediate", (*pgserver.Server).Crash}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			postgresRestart(t, mode.restart)
		})
	}
}

func postgresRestart(t *testing.T, restart func(*pgserver.Server, context.Context) error) {
	ctx := context.Background()
	srv, url := migratedServer(t, map[string]string{"max_connections": "50", "shared_buffers": "32MB"})

	const n = 3000
	admin := testdb.Pool(t, url)
	createRunLog(t, admin)
	ps := slices.Repeat([]EnqueueParams{{Queue: "rs", Kind: "logged", Payload: map[string]int{"ms": 2}}}, n)
	_, err := EnqueueCopy(ctx, admin, ps)
	require.NoError(t, err)
	var logs logbuf.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			for line := range strings.Lines(logs.String()) {
				if !strings.Contains(line, `"level":"INFO"`) {
					t.Log(strings.TrimSpace(line))
				}
			}
		}
	})
	var ids []string
	for range 2 {
		cfg := testConfig(map[string]QueueConfig{"rs": {Concurrency: 4}})
		cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
		// A lease long enough that only the restart loses one: with the
		// default test lease of 2 s (renewed every 0.67 s, each renewal
		// given as long) a loaded machine's stall of a second or two also
		// loses leases, and the job rightly runs again, far from the fault.
		cfg.LeaseDuration = 10 * time.Second
		pool := testdb.Pool(t, url)
		c := startClient(t, pool, cfg, func(c *Client) { c.Handle("logged", startLogHandler(pool)) })
		ids = append(ids, c.ID())
	}
	// ghost is a worker that never heartbeats (stale from the start) and
	// whose session, recorded before the restart, is open until then: a
	// live but silent worker before the restart, a worker whose session
	// went with the server after it. It must never be taken for dead. The
	// cleanup keeps the connection referenced: an unreferenced pgx.Conn is
	// closed by the garbage collector (its socket's finalizer), which would
	// end the session and make the ghost a truly dead worker before the
	// restart, rightly reclaimed.
	ghost, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { ghost.Close(context.Background()) })
	_, err = ghost.Exec(ctx, "INSERT INTO workers (id, host, pid, last_seen_at) VALUES ('ghost', 'h', 1, now() - interval '1 hour')")
	require.NoError(t, err)
	_, err = ghost.Exec(ctx, sqlText("worker_session_record"), "ghost")
	require.NoError(t, err)
	runtime.GC()

	done := func() int64 {
		var d int64
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status = 'done'").Scan(&d); err != nil {
			return -1 // the server is restarting
		}
		return d
	}
	testdb.Eventually(t, 30*time.Second, "work under way", func() bool { return done() >= 200 })
	// Both clients have looked for dead workers since the collection: the
	// silent ghost with its open session is alive.
	awaitReclaimPasses(t, admin, ids)
	requireNoneReclaimed(t, admin, "a stale heartbeat with an open session before the restart")
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, restart(srv, rctx))
	// The first statements on the admin pool may meet its broken
	// connections; the snapshot is taken as soon as the server answers.
	var durable int64
	testdb.Eventually(t, 30*time.Second, "the done jobs snapshot after the restart", func() bool {
		tag, err := admin.Exec(ctx, snapshotDurableSQL)
		durable = tag.RowsAffected()
		return err == nil
	})
	var back time.Time
	require.NoError(t, admin.QueryRow(ctx, "SELECT pg_postmaster_start_time()").Scan(&back))
	t.Logf("restarted PostgreSQL with %d of %d jobs done; it was back at %s", durable, n, back.Format("15:04:05.000000"))
	testdb.Eventually(t, 60*time.Second, "every job done after the restart", func() bool { return done() == n })
	// Cut short by the restart: the first attempt's lease was taken before
	// the server came back (its start_log insert may have waited the
	// restart out), the second started after.
	twice := requireRanOnce(t, admin, n, "(f).claimed_at < $1 AND (s).at > $1", back)
	t.Logf("%d jobs started twice, each cut short by the restart", twice)
	requireNoStaleAckOfDone(t, admin, logs.String())
	var total int64
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&total))
	require.EqualValues(t, n, total)
	requireNoneReclaimed(t, admin, "the restart made a live worker look dead")
	var diedErrors int
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE errors::text LIKE '%worker_died%'").Scan(&diedErrors))
	require.Zero(t, diedErrors)

	// The ghost's session is gone and its heartbeat stale, but it was
	// recorded before the restart: not dead. A worker recorded on the
	// running server whose session then went is.
	_, err = admin.Exec(ctx, "UPDATE workers SET last_seen_at = now() - interval '1 hour' WHERE id = 'ghost'")
	require.NoError(t, err)
	res, err := JobReclaimDead(ctx, admin, time.Second, 20)
	require.NoError(t, err)
	require.Empty(t, res.Workers, "a session recorded before the restart says nothing about the worker")
	gone, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = gone.Exec(ctx, sqlText("worker_session_record"), "ghost")
	require.NoError(t, err)
	require.NoError(t, gone.Close(ctx))
	_, err = admin.Exec(ctx, "UPDATE workers SET last_seen_at = now() - interval '1 hour' WHERE id = 'ghost'")
	require.NoError(t, err)
	testdb.Eventually(t, 10*time.Second, "the ghost found dead", func() bool {
		var r *time.Time
		return admin.QueryRow(ctx, "SELECT reclaimed_at FROM workers WHERE id = 'ghost'").Scan(&r) == nil && r != nil
	})
}

// awaitReclaimPasses waits until every client in ids has run its
// maintenance tick (heartbeat, then the dead-worker pass) twice since the
// call: the second heartbeat follows a dead-worker pass that started after
// the call.
func awaitReclaimPasses(t *testing.T, db *pgxpool.Pool, ids []string) {
	t.Helper()
	ctx := context.Background()
	for range 2 {
		var since time.Time
		require.NoError(t, db.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&since))
		testdb.Eventually(t, 30*time.Second, "a heartbeat from every client", func() bool {
			var behind int
			err := db.QueryRow(ctx, "SELECT count(*) FROM workers WHERE id = ANY ($1) AND last_seen_at <= $2", ids, since).Scan(&behind)
			return err == nil && behind == 0
		})
	}
}

// requireNoneReclaimed fails, naming them, when workers were found dead.
func requireNoneReclaimed(t *testing.T, db *pgxpool.Pool, what string) {
	t.Helper()
	var reclaimed []string
	require.NoError(t, db.QueryRow(context.Background(),
		"SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM workers WHERE reclaimed_at IS NOT NULL").Scan(&reclaimed))
	require.Empty(t, reclaimed, "workers taken for dead (%s)", what)
}

// TestShutdownGraceful checks the shutdown order and that nothing leaks:
// jobs that finish within the drain deadline are acked, the others are
// cancelled and released with their attempt counted, the workers row is
// marked stopped, and no goroutine survives Stop. Not parallel, so that
// goleak sees only this test's goroutines.
func TestShutdownGraceful(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	before := goleak.IgnoreCurrent()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	var quickDone atomic.Int64
	var started atomic.Int64
	var logs logbuf.Buffer
	cfg := testConfig(map[string]QueueConfig{"sd": {Concurrency: 4}, "other": {Concurrency: 1}})
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	c, err := NewClient(pool, cfg)
	require.NoError(t, err)
	registerTestKinds(c)
	c.Handle("quick", func(ctx context.Context, _ *Job) error {
		started.Add(1)
		t := time.NewTimer(100 * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			quickDone.Add(1)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	c.Handle("forever", func(ctx context.Context, _ *Job) error {
		started.Add(1)
		<-ctx.Done()
		return ctx.Err()
	})
	require.NoError(t, c.Start(ctx))
	var ids []int64
	for _, kind := range []string{"quick", "quick", "forever", "forever"} {
		j, err := c.Enqueue(ctx, EnqueueParams{Queue: "sd", Kind: kind})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	for range 20 {
		_, err := c.Enqueue(ctx, EnqueueParams{Queue: "sd", Kind: "noop", RunAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	testdb.Eventually(t, 10*time.Second, "4 jobs started", func() bool { return started.Load() == 4 })

	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = c.Stop(sctx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the forever jobs outlived the drain deadline")
	var de *DrainError
	require.ErrorAs(t, err, &de)
	require.Equal(t, ids[2:], de.Released, "the error names the released jobs")
	require.Zero(t, de.StillRunning)
	var lines int
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"drain deadline interrupted jobs"`) {
			lines++
			require.Contains(t, line, fmt.Sprintf(`"released":2,"released_ids":[%d,%d]`, ids[2], ids[3]))
		}
	}
	require.Equal(t, 1, lines, "one log line says what the deadline interrupted")
	require.EqualValues(t, 2, quickDone.Load())
	for i, id := range ids {
		j, err := JobGet(ctx, pool, id)
		require.NoError(t, err)
		if i < 2 {
			require.Equal(t, StatusDone, j.Status)
		} else {
			require.Equal(t, StatusReady, j.Status, "interrupted jobs are released")
			require.Equal(t, 1, j.Attempts)
			require.Nil(t, j.LeaseOwner)
		}
	}
	ws, err := WorkerList(ctx, pool, 0)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	require.NotNil(t, ws[0].StoppedAt)
	require.Zero(t, ws[0].InFlight)
	require.NoError(t, c.Stop(ctx), "second Stop is a no-op")
	pool.Close()
	goleak.VerifyNone(t, before)
}

// TestWorkerReportsEngineErrors: the errors a worker meets talking to the
// database reach its workers row with their SQLSTATE, so the console can
// say what the engine is failing on.
func TestWorkerReportsEngineErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	c := startClient(t, pool, testConfig(map[string]QueueConfig{"errs": {Concurrency: 1}}), func(*Client) {})
	// Every claim and settings read now fails: undefined_table.
	_, err := pool.Exec(ctx, "ALTER TABLE queue_settings RENAME TO queue_settings_gone")
	require.NoError(t, err)
	var got []EngineError
	testdb.Eventually(t, 20*time.Second, "the worker reports the failure", func() bool {
		ws, err := WorkerList(ctx, pool, 0)
		require.NoError(t, err)
		for _, w := range ws {
			if w.ID == c.ID() {
				got = w.RecentErrors
			}
		}
		for _, e := range got {
			if e.SQLState == "42P01" && (e.Op == "claim" || e.Op == "settings") && strings.Contains(e.Error, "queue_settings") {
				return true
			}
		}
		return false
	})
	require.LessOrEqual(t, len(got), maxEngineErrors)
}

// TestOrphanClaimReleased: a claim whose commit went through but whose
// reply was lost (a restart broke the connection) leaves a job the database
// says the worker holds but the worker does not run; after the reconnect
// the worker releases it and runs it, instead of waiting out its lease. A
// job the worker is running, claimed as long ago, is left alone.
func TestOrphanClaimReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	cfg := testConfig(map[string]QueueConfig{"orph": {Concurrency: 3}})
	cfg.LeaseDuration = time.Hour
	ran := make(chan int64, 1)
	started, unblock := make(chan int64, 2), make(chan struct{})
	c := startClient(t, pool, cfg, func(c *Client) {
		c.Handle("o", func(_ context.Context, j *Job) error {
			ran <- j.ID
			return nil
		})
		c.Handle("long", func(_ context.Context, j *Job) error {
			started <- j.ID
			<-unblock
			return nil
		})
	})
	defer close(unblock)
	// A job running here, claimed two hours ago as far as the database
	// knows: the orphan check must see it runs.
	long, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "orph", Kind: "long"})
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the long job did not start")
	}
	_, err = pool.Exec(ctx, `UPDATE jobs SET started_at = now() - interval '2 hours' WHERE id = $1`, long.ID)
	require.NoError(t, err)
	// The lost claim: the job is running under this worker's name, claimed
	// long enough ago that no claim of the worker can still be in flight.
	j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "orph", Kind: "o", RunAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE jobs SET status = 'running', lease_owner = $2, lease_until = now() + interval '1 hour',
		lease_generation = lease_generation + 1, attempts = 1, available_at = now(), started_at = now() - interval '2 hours'
		WHERE id = $1`, j.ID, c.ID())
	require.NoError(t, err)
	c.startReconcile() // as after a claim error or a listener reconnect
	select {
	case id := <-ran:
		require.Equal(t, j.ID, id)
	case <-time.After(20 * time.Second):
		t.Fatal("the orphan claim was not released and run")
	}
	c.releaseOrphans(ctx) // once more, now that the orphan is done
	got, err := JobGet(ctx, pool, long.ID)
	require.NoError(t, err)
	require.Equal(t, StatusRunning, got.Status, "the running job was released as an orphan")
	require.EqualValues(t, 1, got.LeaseGeneration, "the running job was claimed again")
	require.Empty(t, started, "the running job started twice")
}

// TestAckReplyLost: an ack statement commits but its reply never arrives
// (a proxy lets the server run it to its commit, drops the answer and cuts
// the connection). The worker retries, the retry matches nothing, and the
// worker checks whether its own lost ack went through:
//   - the check answers: the job is counted done, not logged or counted as
//     a stale ack;
//   - the check's reply is lost too: the outcome is unknown, and said so,
//     not logged or counted as a stale ack (a lost lease it cannot tell), and
//     still counted as an ended attempt (ack_failed).
func TestAckReplyLost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, then string
		wantLog    string
		finished   map[string]float64
	}{
		{"confirmed", "", "acks whose reply was lost were committed", map[string]float64{"done": 1}},
		{"check lost too", "jobackconfirm:", "ack outcome unknown", map[string]float64{"ack_failed": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := testdb.URL(t)
			admin := testdb.Pool(t, dbURL)
			u, err := url.Parse(dbURL)
			require.NoError(t, err)
			proxy := obStartProxy(t, u.Host)
			proxy.match, proxy.then = "jobackmany:", tc.then
			u.Host = proxy.addr()
			pool := testdb.Pool(t, u.String())

			var logs logbuf.Buffer
			reg := prometheus.NewRegistry()
			ccfg := testConfig(map[string]QueueConfig{"lost": {Concurrency: 1}})
			ccfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			ccfg.Registerer = reg
			startClient(t, pool, ccfg, func(c *Client) { registerTestKinds(c) })
			proxy.armed.Store(true)
			j, err := EnqueueTx(ctx, admin, EnqueueParams{Queue: "lost", Kind: "noop"})
			require.NoError(t, err)
			testdb.Eventually(t, 60*time.Second, "the job done", func() bool {
				return countJobs(t, admin, "id = $1 AND status = 'done'", j.ID) == 1
			})
			testdb.Eventually(t, 60*time.Second, "the worker to write the ack's outcome", func() bool {
				l := logs.String()
				return strings.Contains(l, "acks whose reply was lost") || strings.Contains(l, "stale ack refused") ||
					strings.Contains(l, "ack failed") || strings.Contains(l, "ack outcome unknown")
			})
			wantCuts := 1
			if tc.then != "" {
				wantCuts = 2
			}
			require.EqualValues(t, wantCuts, proxy.cuts.Load(), "the replies cut")
			got, err := JobGet(ctx, admin, j.ID)
			require.NoError(t, err)
			require.Equal(t, StatusDone, got.Status)
			require.NotContains(t, logs.String(), "stale ack refused")
			require.Contains(t, logs.String(), tc.wantLog)
			finished := map[string]float64{}
			mfs, err := reg.Gather()
			require.NoError(t, err)
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					switch mf.GetName() {
					case "queues_stale_acks_total":
						finished["stale_ack"] += m.GetCounter().GetValue()
					case "queues_jobs_finished_total":
						for _, l := range m.GetLabel() {
							if l.GetName() == "result" {
								finished[l.GetValue()] += m.GetCounter().GetValue()
							}
						}
					}
				}
			}
			maps.DeleteFunc(finished, func(_ string, v float64) bool { return v == 0 })
			require.Equal(t, tc.finished, finished, "counted as its outcome is known, never as a stale ack")
		})
	}
}
