package queues

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// queueCountsMatch checks the sums of queue_job_counts against a count of
// the ready and running jobs themselves, queue by queue.
func queueCountsMatch(t *testing.T, db DBTX, step string) {
	t.Helper()
	countsMatch(t, db, step,
		`SELECT queue, count(*) FILTER (WHERE status = 'ready') || '/' || count(*) FILTER (WHERE status = 'running')
		 FROM jobs WHERE status IN ('ready', 'running') GROUP BY queue`,
		`SELECT queue, sum(ready) || '/' || sum(running) FROM queue_job_counts
		 GROUP BY queue HAVING sum(ready) <> 0 OR sum(running) <> 0`)
}

// compactQueueCounts folds queue_job_counts, as the triggers do about once
// in 64 statements.
func compactQueueCounts(t *testing.T, db DBTX) {
	t.Helper()
	_, err := db.Exec(context.Background(), `SELECT queue_job_count_compact()`)
	require.NoError(t, err)
}

// TestQueueJobCountsFollowJobs: every way a job enters or leaves 'ready'
// or 'running' (enqueue one, many and by COPY, claim, ack, retry, death,
// cancel, requeue, reap, delete, a rollback, a fold, a truncate) keeps
// queue_job_counts equal to the jobs, and a fold leaves one row per queue
// with a nonzero count.
func TestQueueJobCountsFollowJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	queueCountsMatch(t, pool, "nothing")

	for range 3 {
		enqueueT(t, pool, EnqueueParams{Queue: "a", Kind: "k"})
	}
	enqueueT(t, pool, EnqueueParams{Queue: "a", Kind: "k", RunAt: time.Now().Add(time.Hour)})
	_, err := EnqueueManyTx(ctx, pool, []EnqueueParams{{Queue: "a", Kind: "k"}, {Queue: "b", Kind: "k"}, {Queue: "b", Kind: "k"}})
	require.NoError(t, err)
	ps := make([]EnqueueParams, 500)
	for i := range ps {
		ps[i] = EnqueueParams{Queue: fmt.Sprintf("c%d", i%3), Kind: "k"}
	}
	_, err = EnqueueCopy(ctx, pool, ps)
	require.NoError(t, err)
	queueCountsMatch(t, pool, "enqueues (one, many, COPY)")

	dup := EnqueueParams{Queue: "a", Kind: "k", DedupeKey: "once"}
	enqueueT(t, pool, dup)
	_, err = EnqueueTx(ctx, pool, dup)
	require.ErrorIs(t, err, ErrDuplicate)
	queueCountsMatch(t, pool, "a deduplicated enqueue")

	c := claimOne(t, pool, "a", "w", time.Minute)
	queueCountsMatch(t, pool, "a claim")
	jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: "c1", Limit: 100, Owner: "w", Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 100)
	queueCountsMatch(t, pool, "a claim of 100")
	ids, gens := make([]int64, 50), make([]int64, 50)
	for i := range ids {
		ids[i], gens[i] = jobs[i].ID, jobs[i].LeaseGeneration
	}
	_, err = JobAckMany(ctx, pool, "w", ids, gens)
	require.NoError(t, err)
	require.NoError(t, JobAck(ctx, pool, c.ID, "w", c.LeaseGeneration))
	queueCountsMatch(t, pool, "acks")
	require.NoError(t, JobRenew(ctx, pool, jobs[50].ID, "w", jobs[50].LeaseGeneration, time.Hour))
	queueCountsMatch(t, pool, "a lease renewal")

	_, err = JobFail(ctx, pool, JobFailParams{ID: jobs[51].ID, Owner: "w", Generation: jobs[51].LeaseGeneration, Err: errors.New("retry me")})
	require.NoError(t, err)
	queueCountsMatch(t, pool, "a failure retried")
	deadID := deadJob(t, pool, "d", errors.New("boom"))
	queueCountsMatch(t, pool, "a death")
	_, err = JobRetryNowTx(ctx, pool, deadID)
	require.NoError(t, err)
	queueCountsMatch(t, pool, "a dead job retried")
	j := enqueueT(t, pool, EnqueueParams{Queue: "d", Kind: "k"})
	_, err = JobCancelTx(ctx, pool, j.ID)
	require.NoError(t, err)
	deadJob(t, pool, "e", errors.New("boom"))
	_, err = DeadLetterRequeueTx(ctx, pool, DeadLetterFilter{Queue: "e", ErrorClass: ErrorClass(errors.New("boom"))}, 10, true)
	require.NoError(t, err)
	queueCountsMatch(t, pool, "a cancel and a requeue")

	for _, job := range jobs[52:60] {
		expireLease(t, pool, job.ID)
	}
	res, err := JobReap(ctx, pool, 100, 0)
	require.NoError(t, err)
	require.NotZero(t, res)
	queueCountsMatch(t, pool, "a reap of expired leases")

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) }) // before the pool closes
	for range 5 {
		enqueueT(t, tx, EnqueueParams{Queue: "a", Kind: "k"})
	}
	_, err = JobClaim(ctx, tx, JobClaimParams{Queue: "c2", Limit: 20, Owner: "w", Lease: time.Minute})
	require.NoError(t, err)
	queueCountsMatch(t, tx, "enqueues and a claim, inside their transaction")
	compactQueueCounts(t, tx)
	queueCountsMatch(t, tx, "a fold inside the transaction")
	require.NoError(t, tx.Rollback(ctx))
	queueCountsMatch(t, pool, "a rolled-back transaction that folded")

	_, err = pool.Exec(ctx, `DELETE FROM jobs WHERE queue = 'c0' AND id % 2 = 0`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE jobs SET queue = 'moved' WHERE queue = 'b'`)
	require.NoError(t, err)
	queueCountsMatch(t, pool, "a delete and a queue rename")

	compactQueueCounts(t, pool)
	queueCountsMatch(t, pool, "a fold")
	var rows, queues int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT queue) FROM queue_job_counts`).Scan(&rows, &queues))
	require.Equal(t, queues, rows, "a fold leaves one row per queue")
	var zero int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM queue_job_counts WHERE queue = 'b'`).Scan(&zero))
	require.Zero(t, zero, "a queue with nothing ready or running drops out of the fold")

	_, err = pool.Exec(ctx, `TRUNCATE jobs`)
	require.NoError(t, err)
	queueCountsMatch(t, pool, "a truncate")
}

// TestQueueJobCountsConcurrent: eight workers enqueueing, claiming, acking,
// failing and killing jobs of three queues at once, while another session
// folds the counters over and over, leave queue_job_counts exact, and
// QueueHealth reports the same numbers.
func TestQueueJobCountsConcurrent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := testdb.New(t)

	worker := func(w int) error {
		queue := fmt.Sprintf("q%d", w%3)
		owner := fmt.Sprintf("w%d", w)
		for i := range 40 {
			ps := make([]EnqueueParams, 3)
			for k := range ps {
				ps[k] = EnqueueParams{Queue: queue, Kind: "k", MaxAttempts: 2}
			}
			if _, err := EnqueueManyTx(ctx, pool, ps); err != nil {
				return err
			}
			jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: queue, Limit: 2, Owner: owner, Lease: time.Minute})
			if err != nil {
				return err
			}
			for k, j := range jobs {
				switch (i + k) % 3 {
				case 0:
					err = JobAck(ctx, pool, j.ID, owner, j.LeaseGeneration)
				case 1:
					_, err = JobFail(ctx, pool, JobFailParams{ID: j.ID, Owner: owner, Generation: j.LeaseGeneration, Err: errors.New("flaky")})
				default:
					_, err = JobFail(ctx, pool, JobFailParams{ID: j.ID, Owner: owner, Generation: j.LeaseGeneration, Err: errors.New("fatal"), Permanent: true})
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	done := make(chan struct{})
	folds := make(chan error, 1)
	go func() {
		defer close(folds)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := pool.Exec(ctx, `SELECT queue_job_count_compact()`); err != nil {
				folds <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() { errs <- worker(w) })
	}
	wg.Wait()
	close(done)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, <-folds)
	queueCountsMatch(t, pool, "eight concurrent workers and folds")

	stats, err := QueueHealth(ctx, pool, QueueHealthParams{})
	require.NoError(t, err)
	var ready, running int64
	for _, s := range stats {
		ready, running = ready+s.ReadyTotal(), running+s.Running
	}
	var wantReady, wantRunning int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'ready'), count(*) FILTER (WHERE status = 'running') FROM jobs`).
		Scan(&wantReady, &wantRunning))
	require.Equal(t, wantReady, ready)
	require.Equal(t, wantRunning, running)
	require.NotZero(t, wantReady, "the workers leave a backlog of retried jobs and unclaimed ones")
}

// TestQueueHealthScheduledCap: jobs scheduled for later are counted up to
// the count cap, and ReadyExact says Ready is then an upper bound.
func TestQueueHealthScheduledCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, `INSERT INTO jobs (queue, kind, available_at)
		SELECT 'later', 'k', now() + interval '1 hour' FROM generate_series(1, $1::int + 5)`, DefaultCountCap)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind, available_at)
		SELECT q, 'k', now() - interval '1 minute' FROM generate_series(1, 7), (VALUES ('later'), ('soon')) AS v(q)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO jobs (queue, kind, available_at) VALUES ('soon', 'k', now() + interval '1 hour')`)
	require.NoError(t, err)
	stats, err := QueueHealth(ctx, pool, QueueHealthParams{})
	require.NoError(t, err)
	require.Len(t, stats, 2)
	later, soon := stats[0], stats[1]
	require.EqualValues(t, DefaultCountCap+12, later.ReadyTotal())
	require.EqualValues(t, DefaultCountCap, later.Scheduled)
	require.EqualValues(t, 12, later.Ready, "ready minus the capped count of scheduled jobs: at most 12 due")
	require.False(t, later.ReadyExact())
	require.EqualValues(t, 8, soon.ReadyTotal())
	require.EqualValues(t, 7, soon.Ready)
	require.True(t, soon.ReadyExact())
	require.InDelta(t, 60, soon.OldestReadySeconds, 30)
}

// An enqueue inside the caller's REPEATABLE READ transaction never fails
// for the counters' sake: a fold (about one statement in 64) run by a
// transaction whose snapshot predates another fold's commit would delete
// rows that fold deleted, a serialization error in the caller's
// transaction. The fold runs only under READ COMMITTED; the counts stay
// exact either way.
func TestQueueCountFoldSparesRepeatableRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	enqueueT(t, pool, EnqueueParams{Queue: "rr", Kind: "k"})

	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT count(*) FROM queue_job_counts`) // the snapshot
	require.NoError(t, err)
	// Another session enqueues and folds, and commits.
	enqueueT(t, pool, EnqueueParams{Queue: "rr", Kind: "k"})
	compactQueueCounts(t, pool)

	_, err = EnqueueTx(ctx, tx, EnqueueParams{Queue: "rr", Kind: "k"})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT queue_job_count_compact()`) // the fold the trigger may call
	require.NoError(t, err, "a fold under REPEATABLE READ")
	require.NoError(t, tx.Commit(ctx))
	queueCountsMatch(t, pool, "three enqueues, one under REPEATABLE READ")
}
