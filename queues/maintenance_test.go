package queues

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func obInsertFinished(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO jobs (queue, kind, status, attempts, created_at, finished_at)
		SELECT 'history', 'noop', CASE WHEN g % 10 = 0 THEN 'dead' ELSE 'done' END, 1,
		       clock_timestamp() - interval '3 days', clock_timestamp() - interval '2 days'
		FROM generate_series(1, $1) AS g`, n)
	require.NoError(t, err)
}

// Archive under load: workers keep enqueueing, claiming and acking on the
// same table with lock_timeout 200ms (a wait longer than that fails their
// statement) while archive_jobs moves 30,000 finished rows in batches.
func TestMaintenanceArchiveUnderLoadDoesNotBlockWorkers(t *testing.T) {
	testdb.SkipShort(t, "a load drill: three workers flat out for the whole archive")
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	obInsertFinished(t, pool, 30000)
	acfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	acfg.ConnConfig.RuntimeParams["application_name"] = "ob-archive"
	archivePool, err := pgxpool.NewWithConfig(ctx, acfg)
	require.NoError(t, err)
	defer archivePool.Close()

	wcfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	wcfg.ConnConfig.RuntimeParams["lock_timeout"] = "200ms"
	wcfg.ConnConfig.RuntimeParams["application_name"] = "ob-worker"
	workers, err := pgxpool.NewWithConfig(ctx, wcfg)
	require.NoError(t, err)
	defer workers.Close()

	stop := make(chan struct{})
	var ops, lockWaitSamples, blockedByArchive atomic.Int64
	var mu sync.Mutex
	var errs []error
	var maxLatency time.Duration
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := "ob-worker-" + string(rune('a'+w))
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				_, err := EnqueueTx(ctx, workers, EnqueueParams{Queue: "live", Kind: "noop"})
				if err == nil {
					var jobs []Job
					jobs, err = JobClaim(ctx, workers, JobClaimParams{Queue: "live", Limit: 5, Owner: owner, Lease: 30 * time.Second})
					for _, j := range jobs {
						if err == nil {
							err = JobAck(ctx, workers, j.ID, owner, j.LeaseGeneration)
						}
					}
				}
				d := time.Since(start)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				}
				maxLatency = max(maxLatency, d)
				mu.Unlock()
				ops.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			// Worker backends waiting on a lock, and those whose blocker is
			// the archive's backend.
			var waiting, byArchive int64
			if err := pool.QueryRow(ctx, `SELECT count(*),
				       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM pg_stat_activity b
				           WHERE b.pid = ANY (pg_blocking_pids(w.pid)) AND b.application_name = 'ob-archive'))
				FROM pg_stat_activity w
				WHERE w.application_name = 'ob-worker' AND w.wait_event_type = 'Lock'`).Scan(&waiting, &byArchive); err == nil {
				lockWaitSamples.Add(waiting)
				blockedByArchive.Add(byArchive)
			}
		}
	}()
	testdb.Eventually(t, 10*time.Second, "workers running", func() bool { return ops.Load() > 20 })

	res, err := RunMaintenance(ctx, archivePool, KindArchiveJobs, MaintenanceParams{Retention: "24h"},
		MaintenanceConfig{BatchSize: 500, MaxWALBytesPerSecond: -1}, nil)
	require.NoError(t, err)
	before := ops.Load()
	testdb.Eventually(t, 10*time.Second, "workers still running after the archive", func() bool { return ops.Load() > before+20 })
	close(stop)
	wg.Wait()

	require.Empty(t, errs, "worker statements failed (a lock wait over 200ms fails them)")
	require.Zero(t, blockedByArchive.Load(), "a worker waited on a lock held by the archive")
	require.Equal(t, int64(30000), res.RowsMoved)
	require.False(t, res.Stopped)
	require.Greater(t, res.WALBytes, int64(0))
	var archived, hot, liveArchived int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs_archive").Scan(&archived))
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE queue = 'history'").Scan(&hot))
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs_archive WHERE queue = 'live'").Scan(&liveArchived))
	require.Equal(t, 30000, archived)
	require.Zero(t, hot)
	require.Zero(t, liveArchived, "recently finished jobs are inside the retention")
	runs, err := MaintenanceRunList(ctx, pool, 5)
	require.NoError(t, err)
	require.Equal(t, "finished", runs[0].State)
	require.Equal(t, int64(30000), runs[0].RowsMoved)
	require.Equal(t, res.Batches, runs[0].Batches)
	t.Logf("archive: %d rows in %d batches, %d WAL bytes; workers: %d cycles, max cycle %s, lock-wait samples %d (blocked by archive %d)",
		res.RowsMoved, res.Batches, res.WALBytes, ops.Load(), maxLatency, lockWaitSamples.Load(), blockedByArchive.Load())
}

func TestMaintenanceStopsEarly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	obInsertFinished(t, pool, 20000)

	t.Run("StopRequested", func(t *testing.T) {
		type out struct {
			res MaintenanceResult
			err error
		}
		done := make(chan out, 1)
		go func() {
			res, err := RunMaintenance(ctx, pool, KindArchiveJobs, MaintenanceParams{Retention: "24h", BatchSize: 50},
				MaintenanceConfig{MaxWALBytesPerSecond: -1}, nil)
			done <- out{res, err}
		}()
		var runID int64
		testdb.Eventually(t, 10*time.Second, "the run to make progress", func() bool {
			runs, err := MaintenanceRunList(ctx, pool, 1)
			if err != nil || len(runs) == 0 || runs[0].RowsMoved == 0 {
				return false
			}
			runID = runs[0].ID
			return true
		})
		require.NoError(t, MaintenanceStopTx(ctx, pool, runID))
		var o out
		select {
		case o = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("run did not stop")
		}
		require.NoError(t, o.err)
		require.True(t, o.res.Stopped)
		require.Less(t, o.res.RowsMoved, int64(20000))
		runs, err := MaintenanceRunList(ctx, pool, 1)
		require.NoError(t, err)
		require.Equal(t, "stopped", runs[0].State)
		require.ErrorIs(t, MaintenanceStopTx(ctx, pool, runID), ErrNotFound)
	})

	t.Run("ContextCancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var batches atomic.Int64
		cfg := MaintenanceConfig{MaxWALBytesPerSecond: 1, Pause: 10 * time.Millisecond, MaxPausePerBatch: time.Hour}
		go func() {
			// Cancel once the run has done a batch (or give up after 10s,
			// which the assertion below reports).
			defer cancel()
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				runs, err := MaintenanceRunList(ctx, pool, 1)
				if err == nil && len(runs) > 0 && runs[0].State == "running" && runs[0].Batches > 0 {
					batches.Store(1)
					return
				}
			}
		}()
		// Pausing "forever" on WAL rate until the context ends.
		res, err := RunMaintenance(cctx, pool, KindArchiveJobs, MaintenanceParams{Retention: "24h", BatchSize: 50}, cfg, nil)
		require.NoError(t, err)
		require.True(t, res.Stopped)
		require.Equal(t, int64(1), batches.Load())
		runs, err := MaintenanceRunList(ctx, pool, 1)
		require.NoError(t, err)
		require.Equal(t, "stopped", runs[0].State)
	})

	t.Run("PausesOnWALRate", func(t *testing.T) {
		res, err := RunMaintenance(ctx, pool, KindArchiveJobs, MaintenanceParams{Retention: "24h", BatchSize: 100, MaxBatches: 3},
			MaintenanceConfig{MaxWALBytesPerSecond: 1, Pause: 20 * time.Millisecond, MaxPausePerBatch: 60 * time.Millisecond}, nil)
		require.NoError(t, err)
		// It paused; afterwards it either gave up (WAL kept flowing) or went
		// on once a pause saw no WAL at all.
		require.Greater(t, res.PausedSeconds, 0.0)
		require.LessOrEqual(t, res.Batches, 3)
	})
}

func TestMaintenancePrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO outbox_events (topic, event_type, payload, state, published_at)
		SELECT 't', 'e', '{}', 'published', clock_timestamp() - interval '10 days' FROM generate_series(1, 1200);
		INSERT INTO outbox_events (topic, event_type, payload, state, dead_at)
		SELECT 't', 'e', '{}', 'dead', clock_timestamp() - interval '10 days' FROM generate_series(1, 5);
		INSERT INTO consumer_inbox (consumer_name, event_id, processed_at)
		SELECT 'c', g::text, clock_timestamp() - interval '40 days' FROM generate_series(1, 700) AS g;
		INSERT INTO consumer_inbox (consumer_name, event_id) VALUES ('c', 'fresh')`)
	require.NoError(t, err)
	obEnqueue(t, pool, "t", 3)

	res, err := RunMaintenance(ctx, pool, KindPruneOutbox, MaintenanceParams{}, MaintenanceConfig{BatchSize: 500, MaxWALBytesPerSecond: -1}, nil)
	require.NoError(t, err)
	require.Equal(t, int64(1200), res.RowsMoved)
	require.Equal(t, 3, res.Batches)
	require.Equal(t, 3, obCountState(t, pool, OutboxPending))
	require.Equal(t, 5, obCountState(t, pool, OutboxDead))

	_, err = RunMaintenance(ctx, pool, KindPruneInbox, MaintenanceParams{Retention: "1h"}, MaintenanceConfig{}, nil)
	require.Error(t, err)
	require.True(t, IsPermanent(err))
	res, err = RunMaintenance(ctx, pool, KindPruneInbox, MaintenanceParams{}, MaintenanceConfig{MaxWALBytesPerSecond: -1}, nil)
	require.NoError(t, err)
	require.Equal(t, int64(700), res.RowsMoved)
	entries, err := InboxLookup(ctx, pool, "fresh")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	_, err = RunMaintenance(ctx, pool, "vacuum_everything", MaintenanceParams{}, MaintenanceConfig{}, nil)
	require.Error(t, err)
}

// End to end: a schedule enqueues archive_jobs, a worker Client with the
// maintenance kinds registered runs it, and the finished history moves.
func TestMaintenanceScheduledArchiveRunsOnWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	obInsertFinished(t, pool, 2000)
	_, err := ScheduleCreate(ctx, pool, ScheduleParams{Name: "archive", Spec: "@every 1s", Kind: KindArchiveJobs,
		Payload: MaintenanceParams{Retention: "24h", BatchSize: 300}})
	require.NoError(t, err)
	sched, err := NewScheduler(pool, SchedulerConfig{Interval: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, sched.Start(ctx))
	defer sched.Stop()
	c, err := NewClient(pool, ClientConfig{Queues: map[string]QueueConfig{"maintenance": {Concurrency: 1}}, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	RegisterMaintenance(c, MaintenanceConfig{MaxWALBytesPerSecond: -1})
	require.NoError(t, c.Start(ctx))
	defer c.Stop(ctx)
	testdb.Eventually(t, 30*time.Second, "history archived", func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs_archive WHERE queue = 'history'").Scan(&n))
		return n == 2000
	})
	testdb.Eventually(t, 10*time.Second, "a recorded run with its job", func() bool {
		runs, err := MaintenanceRunList(ctx, pool, 10)
		require.NoError(t, err)
		for _, r := range runs {
			if r.State == "finished" && r.JobID != nil && r.RowsMoved > 0 {
				return true
			}
		}
		return false
	})
}

// The scheduler leader keeps done jobs for SchedulerConfig.JobRetention and
// deletes older ones by itself (no schedule, no worker), in batches, with a
// recorded run; dead jobs, younger done jobs and unfinished jobs stay; a
// scheduler without a retention prunes nothing.
func TestSchedulerPrunesDoneJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	obInsertFinished(t, pool, 1000) // 900 done, 100 dead, finished 2 days ago
	_, err := pool.Exec(ctx, `
		INSERT INTO jobs (queue, kind, status, attempts, created_at, finished_at)
		SELECT 'recent', 'noop', 'done', 1, clock_timestamp() - interval '2 hours', clock_timestamp() - interval '1 hour'
		FROM generate_series(1, 7)`)
	require.NoError(t, err)
	ready, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "pending", Kind: "noop"})
	require.NoError(t, err)

	cfg := SchedulerConfig{Interval: 50 * time.Millisecond, JobRetention: 24 * time.Hour,
		Maintenance: MaintenanceConfig{BatchSize: 250, MaxWALBytesPerSecond: -1}}
	sched, err := NewScheduler(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, sched.Start(ctx))
	defer sched.Stop()
	testdb.Eventually(t, 30*time.Second, "a finished prune_jobs run", func() bool {
		runs, err := MaintenanceRunList(ctx, pool, 10)
		require.NoError(t, err)
		for _, r := range runs {
			if r.Kind == KindPruneJobs && r.State == "finished" {
				require.EqualValues(t, 900, r.RowsMoved, "every old done job, and only those")
				require.Equal(t, 4, r.Batches)
				return true
			}
		}
		return false
	})
	counts := map[string]int{}
	rows, err := pool.Query(ctx, `SELECT queue || '/' || status, count(*) FROM jobs GROUP BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		var n int
		require.NoError(t, rows.Scan(&k, &n))
		counts[k] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{"history/dead": 100, "recent/done": 7, "pending/ready": 1}, counts,
		"dead letters, younger done jobs and job %d (ready) are kept", ready.ID)

	// Off (zero retention): nothing is pruned.
	obInsertFinished(t, pool, 10)
	off, err := NewScheduler(pool, SchedulerConfig{Interval: 50 * time.Millisecond, LockKey: 77, Maintenance: cfg.Maintenance})
	require.NoError(t, err)
	sched.Stop()
	require.NoError(t, off.Start(ctx))
	defer off.Stop()
	testdb.Eventually(t, 10*time.Second, "the other scheduler leads", off.IsLeader)
	time.Sleep(300 * time.Millisecond)
	var old int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE queue = 'history' AND status = 'done'`).Scan(&old))
	require.Equal(t, 9, old, "a scheduler without a retention keeps every done job")
}
