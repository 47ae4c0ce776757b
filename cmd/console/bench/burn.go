package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/internal/metricsum"
	"github.com/pgconsole/console/queues"
)

// copyChunk is how many jobs one COPY carries when a mode fills a queue.
const copyChunk = 10_000

// fill COPYs n no-op jobs into queue with payload, in chunks of copyChunk,
// and returns how long it took.
func fill(ctx context.Context, cfg Config, queue string, n int, payload []byte) (time.Duration, error) {
	return fillTenant(ctx, cfg, queue, "", n, payload)
}

// fillTenant is fill with every job's tenant set ("" for none).
func fillTenant(ctx context.Context, cfg Config, queue, tenant string, n int, payload []byte) (time.Duration, error) {
	start := time.Now()
	for done := 0; done < n; {
		k := min(copyChunk, n-done)
		ps := slices.Repeat([]queues.EnqueueParams{{Queue: queue, Kind: "noop", Payload: payload, TenantID: tenant}}, k)
		if _, err := queues.EnqueueCopy(ctx, cfg.Pool, ps); err != nil {
			return 0, err
		}
		done += k
	}
	return time.Since(start), nil
}

// newClient is the engine as the benchmarks run it: one queue, cfg.Workers
// jobs in flight, claims of up to cfg.Batch; its metrics go to reg (nil:
// nowhere).
func newClient(cfg Config, queue string, reg prometheus.Registerer) (*queues.Client, error) {
	return queues.NewClient(cfg.Pool, queues.ClientConfig{
		Queues:       map[string]queues.QueueConfig{queue: {Concurrency: cfg.Workers}},
		PollInterval: 100 * time.Millisecond,
		MaxClaim:     cfg.Batch,
		Registerer:   reg,
	})
}

func stopClient(c *queues.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.Stop(ctx)
}

// unfinished counts the queue's ready and running jobs through the partial
// indexes (never the finished history).
func unfinished(ctx context.Context, cfg Config, queue string) (int64, error) {
	var n int64
	err := cfg.Pool.QueryRow(ctx, sqlText("unfinished"), queue).Scan(&n)
	return n, err
}

// Burn is the burn-down: cfg.Jobs no-op jobs are COPYed into a fresh queue
// (not timed), then a Client works them; the clock runs from Start until
// the Client has had every job's ack committed (its finished counter).
// Then, untimed, the database must hold no ready or running job of the
// queue, and exactly-once is checked: the handler ran once per job id, and
// every row is done after one attempt and one lease.
//
// The clock used to stop at the first count of the queue's ready and
// running jobs that came back zero. That count, run while the last acks
// commit, walks the index entries every claimed job left behind: in eight
// burn-downs of 200,000 jobs timed both ways it stopped 29-247 ms (median
// 56 ms, 0.5-4.9 %) after the Client had every ack committed (docs/benchmarks-log.md,
// run 18). That was a cost of the measurement, which River's bench (it
// counts completions in its process) does not pay.
func Burn(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	n := cfg.Jobs
	queue := queueName("burn")
	defer deleteQueue(cfg, queue)
	var r Report

	cfg.logf("burn: enqueueing %d jobs", n)
	enq, err := fill(ctx, cfg, queue, n, []byte("{}"))
	if err != nil {
		return r, fmt.Errorf("enqueue: %w", err)
	}
	var first, last, count int64
	if err := cfg.Pool.QueryRow(ctx, sqlText("queue_id_range"), queue).Scan(&first, &last, &count); err != nil {
		return r, err
	}
	if count != int64(n) || last-first+1 != count {
		return r, fmt.Errorf("enqueued %d jobs with ids %d..%d, want %d contiguous ids", count, first, last, n)
	}
	// One counter per job id: the handler's own exactly-once evidence.
	seen := make([]atomic.Int32, n)
	var handled, stray atomic.Int64

	reg := prometheus.NewRegistry()
	c, err := newClient(cfg, queue, reg)
	if err != nil {
		return r, err
	}
	c.Handle("noop", func(_ context.Context, j *queues.Job) error {
		if i := j.ID - first; i >= 0 && i < int64(n) {
			seen[i].Add(1)
		} else {
			stray.Add(1)
		}
		handled.Add(1)
		return nil
	})
	cfg.logf("burn: working %d jobs with %d workers on %d connections", n, cfg.Workers, cfg.PoolSize)
	before, err := readCounters(ctx, cfg)
	if err != nil {
		return r, err
	}
	cpuBefore := processCPU()
	start := time.Now()
	if err := c.Start(ctx); err != nil {
		return r, err
	}
	defer stopClient(c)
	if err := awaitAcked(ctx, reg, n, &handled); err != nil {
		return r, err
	}
	work := time.Since(start)
	cpu := processCPU() - cpuBefore
	if err := checkBurnt(ctx, cfg, queue, n); err != nil {
		return r, err
	}
	after, err := readCounters(ctx, cfg)
	if err != nil {
		return r, err
	}
	stopClient(c)

	check, err := exactlyOnce(ctx, cfg, queue, n, seen, handled.Load(), stray.Load())
	if err != nil {
		return r, err
	}
	r.Add("jobs", "jobs", n, "")
	r.Add("workers", "workers (jobs in flight)", cfg.Workers, "")
	r.Add("max_claim", "largest claim", cfg.Batch, "jobs")
	r.Add("enqueue_seconds", "enqueue (COPY, not timed)", enq.Seconds(), "s")
	r.Add("seconds", "burn-down", work.Seconds(), "s")
	r.Add("jobs_per_second", "throughput", float64(n)/work.Seconds(), "jobs/s")
	r.Add("exactly_once", "every job done exactly once", check, "")
	r.Add("engine_cpu_us_per_job", "this process's CPU time per job while working (user and system)", float64(cpu.Microseconds())/float64(n), "µs")
	r.Add("wal_bytes_per_job", "WAL written per job while working", float64(after.wal-before.wal)/float64(n), "bytes")
	r.Add("commits_per_job", "commits per job while working (whole database)", float64(after.commits-before.commits)/float64(n), "")
	return r, nil
}

// processCPU is the CPU time this process has used so far, user and
// system: the engine's cost beside the server's, which shares the machine.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// counters are server-wide WAL and this database's commits, read before
// and after a measured phase to put a cost per job next to the rate.
type counters struct{ wal, commits int64 }

func readCounters(ctx context.Context, cfg Config) (counters, error) {
	var c counters
	// Commit counts are flushed to the statistics at most once a second, so
	// they are approximate over short runs.
	_, _ = cfg.Pool.Exec(ctx, sqlText("counters_clear"))
	err := cfg.Pool.QueryRow(ctx, sqlText("counters")).Scan(&c.wal, &c.commits)
	if err != nil {
		return c, fmt.Errorf("read WAL and commit counters: %w", err)
	}
	return c, nil
}

// awaitAcked waits until the handler counted n jobs (handled) and the
// Client counted n acks committed (queues_jobs_finished_total, result
// done, in reg), bounded by burnTimeout(n).
func awaitAcked(ctx context.Context, reg *prometheus.Registry, n int, handled *atomic.Int64) error {
	deadline := time.NewTimer(burnTimeout(n))
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			acked, _ := ackedJobs(reg)
			return fmt.Errorf("gave up after %s with %d of %d jobs handled and %d acks committed",
				burnTimeout(n), handled.Load(), n, acked)
		case <-tick.C:
		}
		if handled.Load() < int64(n) {
			continue
		}
		acked, err := ackedJobs(reg)
		if err != nil {
			return err
		}
		if acked >= n {
			return nil
		}
	}
}

// checkBurnt checks, after awaitAcked, that the database holds no ready or
// running job of queue.
func checkBurnt(ctx context.Context, cfg Config, queue string, n int) error {
	left, err := unfinished(ctx, cfg, queue)
	if err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("the engine had all %d acks committed, yet the database holds %d of the queue's jobs ready or running", n, left)
	}
	return nil
}

// ackedJobs is how many acks the Client registered in reg had committed.
func ackedJobs(reg *prometheus.Registry) (int, error) {
	acked, err := metricsum.Counter(reg, "queues_jobs_finished_total", "result", queues.StatusDone)
	if err != nil {
		return 0, fmt.Errorf("read the engine's acks: %w", err)
	}
	return int(acked), nil
}

// burnTimeout bounds a burn-down: generous for a loaded 2-core box (500
// jobs/s), at least a minute.
func burnTimeout(n int) time.Duration {
	return max(time.Minute, time.Duration(n/500)*time.Second)
}

// exactlyOnce checks the handler counted each job once and the rows say
// done, one attempt, one lease generation.
func exactlyOnce(ctx context.Context, cfg Config, queue string, n int, seen []atomic.Int32, handled, stray int64) (bool, error) {
	var missing, dup int
	for i := range seen {
		switch v := seen[i].Load(); {
		case v == 0:
			missing++
		case v > 1:
			dup++
		}
	}
	var total, clean int64
	if err := cfg.Pool.QueryRow(ctx, sqlText("exactly_once"), queue).Scan(&total, &clean); err != nil {
		return false, fmt.Errorf("exactly-once check: %w", err)
	}
	if missing > 0 || dup > 0 || stray > 0 || handled != int64(n) || total != int64(n) || clean != int64(n) {
		return false, fmt.Errorf("%w: handler ran %d times for %d jobs (%d never, %d more than once, %d unknown ids); rows: %d, done after one attempt: %d",
			errNotExactlyOnce, handled, n, missing, dup, stray, total, clean)
	}
	return true, nil
}

var errNotExactlyOnce = errors.New("not exactly once")
