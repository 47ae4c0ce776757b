package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/queues"
)

// commitCallers are the concurrent callers the commit phases compare at.
var commitCallers = []int{1, 4, 16}

// commitPhase is how long one commit phase runs; each runs twice per
// caller count, alternating (plain, enqueue, enqueue, plain).
const commitPhase = 1500 * time.Millisecond

// idleSamples is how many enqueue-to-start latencies the idle phase takes.
const idleSamples = 60

// enqueueCommits measures single-row commits: EnqueueTx against a plain
// INSERT of the same row, each its own transaction, at 1, 4 and 16
// concurrent callers, alternating the two in the same run so that the
// machine's load weighs on both alike; then enqueue-to-start latency on an
// idle queue worked by a Client (default poll interval, LISTEN on).
func enqueueCommits(ctx context.Context, cfg Config, r *Report) error {
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return fmt.Errorf("commit phases: %w", err)
	}
	pcfg.MaxConns = int32(slices.Max(commitCallers) + 2)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("commit phases: %w", err)
	}
	defer pool.Close()
	queue := queueName("commit")
	defer deleteQueue(cfg, queue)
	plain := func(ctx context.Context) error {
		_, err := pool.Exec(ctx, `INSERT INTO jobs (queue, kind, payload, priority, max_attempts)
			VALUES ($1, 'noop', '{}', 0, 8)`, queue)
		return err
	}
	enqueue := func(ctx context.Context) error {
		_, err := queues.EnqueueTx(ctx, pool, queues.EnqueueParams{Queue: queue, Kind: "noop", Payload: []byte("{}")})
		return err
	}
	for _, callers := range commitCallers {
		var rates [2][]float64
		for i, which := range []int{0, 1, 1, 0} {
			f := plain
			if which == 1 {
				f = enqueue
			}
			cfg.logf("enqueue: commits, %d callers, run %d", callers, i+1)
			rate, err := commitRate(ctx, callers, f)
			if err != nil {
				return err
			}
			rates[which] = append(rates[which], rate)
		}
		p := (rates[0][0] + rates[0][1]) / 2
		e := (rates[1][0] + rates[1][1]) / 2
		r.Add(fmt.Sprintf("plain_commits_%d", callers), fmt.Sprintf("plain INSERT commits, %d callers", callers), p, "rows/s")
		r.Add(fmt.Sprintf("enqueue_commits_%d", callers), fmt.Sprintf("EnqueueTx commits, %d callers", callers), e, "rows/s")
		r.Add(fmt.Sprintf("enqueue_commit_ratio_%d", callers), fmt.Sprintf("EnqueueTx / plain INSERT, %d callers", callers), ratio(e, p), "")
	}
	return idleStartLatency(ctx, pool, r)
}

// commitRate runs f from callers goroutines for commitPhase and returns
// calls per second.
func commitRate(ctx context.Context, callers int, f func(context.Context) error) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, commitPhase)
	defer cancel()
	var done atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := f(ctx); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), firstErr
}

// idleStartLatency enqueues one job at a time on an idle queue a Client works
// and times each from the enqueue call to its handler's start.
func idleStartLatency(ctx context.Context, pool *pgxpool.Pool, r *Report) error {
	queue := queueName("idle")
	started := make(chan time.Time, 1)
	c, err := queues.NewClient(pool, queues.ClientConfig{Queues: map[string]queues.QueueConfig{queue: {Concurrency: 4}}})
	if err != nil {
		return err
	}
	c.Handle("mark", func(context.Context, *queues.Job) error {
		started <- time.Now()
		return nil
	})
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = c.Stop(sctx)
		cancel()
		_, _ = pool.Exec(context.Background(), "DELETE FROM jobs WHERE queue = $1", queue)
		_, _ = pool.Exec(context.Background(), "DELETE FROM workers WHERE id = $1", c.ID())
	}()
	// Let the listener connect: the first samples would otherwise wait for
	// the poll.
	if err := waitListening(ctx, pool, c.ID()); err != nil {
		return err
	}
	lat := make([]time.Duration, 0, idleSamples)
	for range idleSamples {
		t0 := time.Now()
		if _, err := c.Enqueue(ctx, queues.EnqueueParams{Queue: queue, Kind: "mark"}); err != nil {
			return err
		}
		select {
		case at := <-started:
			lat = append(lat, at.Sub(t0))
		case <-time.After(10 * time.Second):
			return fmt.Errorf("idle latency: a job did not start within 10s")
		case <-ctx.Done():
			return ctx.Err()
		}
		// An idle queue: the previous job's ack and the client's
		// follow-up claims are over before the next enqueue.
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	slices.Sort(lat)
	r.Add("idle_start_p50_ms", "idle enqueue-to-start p50", ms(percentile(lat, 0.5)), "ms")
	r.Add("idle_start_p99_ms", "idle enqueue-to-start p99", ms(percentile(lat, 0.99)), "ms")
	return nil
}

// waitListening waits until the worker has recorded its LISTEN session.
func waitListening(ctx context.Context, pool *pgxpool.Pool, id string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM workers WHERE id = $1 AND backend_pid IS NOT NULL", id).Scan(&n); err != nil {
			return err
		}
		if n == 1 {
			return nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("idle latency: the worker's listener did not connect within 10s")
}
