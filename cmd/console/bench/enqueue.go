package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/queues"
)

// enqueueBatch is the batch size of EnqueueManyTx in the enqueue mode.
const enqueueBatch = 1000

// singleLimit bounds the single-row phase: it is the slow path, so it
// stops at this many rows or after singleTime.
const (
	singleLimit = 20_000
	singleTime  = 10 * time.Second
)

// Enqueue measures rows/s into the jobs table: raw pgx CopyFrom of the
// same columns (the ceiling), queues.EnqueueCopy, EnqueueManyTx in batches
// of 1,000, and EnqueueTx one row per transaction from PoolSize
// goroutines. Raw and COPY run three times each, alternating (A B B A A B),
// and report their median: on a shared box one phase's figure swings with
// the neighbours' load. The table is vacuumed between phases. Then
// single-row commits: EnqueueTx against a plain INSERT of the same row at
// 1, 4 and 16 callers, alternating, and idle enqueue-to-start latency.
func Enqueue(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	n := cfg.Jobs
	payload := []byte("{}")

	type phase struct {
		name string
		run  func(ctx context.Context, queue string) (int, error)
	}
	raw := phase{"raw", func(ctx context.Context, queue string) (int, error) {
		for done := 0; done < n; {
			k := min(copyChunk, n-done)
			rows := make([][]any, k)
			for i := range rows {
				rows[i] = []any{queue, "noop", payload, int16(0), int32(queues.DefaultMaxAttempts), nil, nil}
			}
			got, err := cfg.Pool.CopyFrom(ctx, pgx.Identifier{"jobs"},
				[]string{"queue", "kind", "payload", "priority", "max_attempts", "dedupe_key", "tenant_id"}, pgx.CopyFromRows(rows))
			if err != nil {
				return done, err
			}
			done += int(got)
		}
		return n, nil
	}}
	copyPhase := phase{"copy", func(ctx context.Context, queue string) (int, error) {
		_, err := fill(ctx, cfg, queue, n, payload)
		return n, err
	}}
	batch := phase{"batch", func(ctx context.Context, queue string) (int, error) {
		for done := 0; done < n; {
			k := min(enqueueBatch, n-done)
			ps := slices.Repeat([]queues.EnqueueParams{{Queue: queue, Kind: "noop", Payload: payload}}, k)
			ids, err := queues.EnqueueManyTx(ctx, cfg.Pool, ps)
			if err != nil {
				return done, err
			}
			done += len(ids)
		}
		return n, nil
	}}
	single := phase{"single", func(ctx context.Context, queue string) (int, error) {
		limit := int64(min(n, singleLimit))
		ctx, cancel := context.WithTimeout(ctx, singleTime)
		defer cancel()
		var next, done atomic.Int64
		var wg sync.WaitGroup
		var firstErr error
		var once sync.Once
		for range cfg.PoolSize {
			wg.Go(func() {
				for next.Add(1) <= limit && ctx.Err() == nil {
					_, err := queues.EnqueueTx(ctx, cfg.Pool, queues.EnqueueParams{Queue: queue, Kind: "noop", Payload: payload})
					if err != nil {
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
		return int(done.Load()), firstErr
	}}

	rates := map[string][]float64{}
	for _, p := range []phase{raw, copyPhase, copyPhase, raw, raw, copyPhase, batch, single} {
		if err := vacuumJobs(ctx, cfg); err != nil {
			return r, err
		}
		queue := queueName("enq-" + p.name)
		cfg.logf("enqueue: %s", p.name)
		start := time.Now()
		rows, err := p.run(ctx, queue)
		took := time.Since(start)
		deleteQueue(cfg, queue)
		if err != nil {
			return r, fmt.Errorf("%s: %w", p.name, err)
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if rows == 0 {
			return r, fmt.Errorf("%s inserted nothing", p.name)
		}
		rates[p.name] = append(rates[p.name], float64(rows)/took.Seconds())
	}
	mid := func(xs []float64) float64 { // the median; one value for batch and single
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	ceiling := mid(rates["raw"])
	r.Add("jobs", "rows per phase", n, "")
	r.Add("raw_rows_per_second", "raw pgx CopyFrom (ceiling)", ceiling, "rows/s")
	r.Add("copy_rows_per_second", "EnqueueCopy", mid(rates["copy"]), "rows/s")
	r.Add("batch_rows_per_second", "EnqueueManyTx, batches of 1,000", mid(rates["batch"]), "rows/s")
	r.Add("single_rows_per_second", fmt.Sprintf("EnqueueTx, %d goroutines", cfg.PoolSize), mid(rates["single"]), "rows/s")
	r.Add("copy_ratio", "EnqueueCopy / ceiling", ratio(mid(rates["copy"]), ceiling), "")
	r.Add("batch_ratio", "EnqueueManyTx / ceiling", ratio(mid(rates["batch"]), ceiling), "")
	r.Add("single_ratio", "EnqueueTx / ceiling", ratio(mid(rates["single"]), ceiling), "")
	if err := enqueueCommits(ctx, cfg, &r); err != nil {
		return r, fmt.Errorf("commits: %w", err)
	}
	return r, nil
}
