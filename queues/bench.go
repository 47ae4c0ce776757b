package queues

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// BurnResult is the outcome of BenchBurn or BenchSQLFloor.
type BurnResult struct {
	Jobs        int
	Concurrency int
	// Enqueue is the COPY time for the jobs; Work the time from start until
	// the last job was acked.
	Enqueue, Work time.Duration
	// JobsPerSecond is Jobs / Work.
	JobsPerSecond float64
}

func (r BurnResult) String() string {
	return fmt.Sprintf("%d jobs, concurrency %d: enqueue %s, work %s, %.0f jobs/s",
		r.Jobs, r.Concurrency, r.Enqueue.Round(time.Millisecond), r.Work.Round(time.Millisecond), r.JobsPerSecond)
}

func benchQueue() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b)
}

func benchEnqueue(ctx context.Context, pool *pgxpool.Pool, queue string, n int) (time.Duration, error) {
	ps := make([]EnqueueParams, n)
	for i := range ps {
		ps[i] = EnqueueParams{Queue: queue, Kind: "noop", Payload: []byte("{}")}
	}
	start := time.Now()
	if _, err := EnqueueCopy(ctx, pool, ps); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func benchCleanup(pool *pgxpool.Pool, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = pool.Exec(ctx, sqlText("bench_cleanup"), queue)
}

// BenchBurn measures burn-down: n no-op jobs are COPYed into a fresh queue,
// then worked by a Client with the given concurrency until all are acked.
// The jobs are deleted afterwards. Run it on a scratch database: it writes.
func BenchBurn(ctx context.Context, pool *pgxpool.Pool, n, concurrency int) (BurnResult, error) {
	queue := benchQueue()
	defer benchCleanup(pool, queue)
	res := BurnResult{Jobs: n, Concurrency: concurrency}
	var err error
	if res.Enqueue, err = benchEnqueue(ctx, pool, queue, n); err != nil {
		return res, fmt.Errorf("bench enqueue: %w", err)
	}
	c, err := NewClient(pool, ClientConfig{
		Queues:       map[string]QueueConfig{queue: {Concurrency: concurrency}},
		PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		return res, err
	}
	var handled atomic.Int64
	c.Handle("noop", func(context.Context, *Job) error {
		handled.Add(1)
		return nil
	})
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		return res, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Stop(sctx)
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-tick.C:
		}
		if handled.Load() < int64(n) {
			continue
		}
		var left int64
		if err := pool.QueryRow(ctx, sqlText("bench_running"), queue).Scan(&left); err != nil {
			return res, err
		}
		if left == 0 {
			break
		}
	}
	res.Work = time.Since(start)
	res.JobsPerSecond = float64(n) / res.Work.Seconds()
	return res, nil
}

// BenchSQLFloor measures the engine's SQL alone: concurrency goroutines
// loop JobClaim (batch jobs at a time) then JobAckMany, with no handler, no
// slots and no goroutine per job, until n jobs are done. Comparing it with
// BenchBurn at the same concurrency shows what the engine itself costs.
func BenchSQLFloor(ctx context.Context, pool *pgxpool.Pool, n, concurrency, batch int) (BurnResult, error) {
	queue := benchQueue()
	defer benchCleanup(pool, queue)
	res := BurnResult{Jobs: n, Concurrency: concurrency}
	var err error
	if res.Enqueue, err = benchEnqueue(ctx, pool, queue, n); err != nil {
		return res, fmt.Errorf("bench enqueue: %w", err)
	}
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	start := time.Now()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("floor-%d", w)
			for done.Load() < int64(n) && ctx.Err() == nil {
				jobs, err := JobClaim(ctx, pool, JobClaimParams{Queue: queue, Limit: batch, Owner: owner, Lease: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if len(jobs) == 0 {
					return
				}
				ids := make([]int64, len(jobs))
				gens := make([]int64, len(jobs))
				for i, j := range jobs {
					ids[i], gens[i] = j.ID, j.LeaseGeneration
				}
				if batch == 1 {
					err = JobAck(ctx, pool, ids[0], owner, gens[0])
				} else {
					var acked []int64
					acked, err = JobAckMany(ctx, pool, owner, ids, gens)
					if err == nil && len(acked) != len(ids) {
						err = errors.New("floor: ack lost a lease")
					}
				}
				if err != nil {
					errs <- err
					return
				}
				done.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	res.Work = time.Since(start)
	res.JobsPerSecond = float64(done.Load()) / res.Work.Seconds()
	return res, ctx.Err()
}
