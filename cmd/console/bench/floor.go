package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/queues"
)

// floorRescan is how long a floor loop resumes after its cursor before it
// starts from the head again, as the engine's default ClaimRescan.
const floorRescan = time.Second

// Floor drives claim and ack statements with no engine around them:
// PoolSize loops, each claiming cfg.Batch jobs and acking them, until
// cfg.Jobs COPYed jobs are done. It runs twice, each time on an emptied
// table (freshJobs), as the burn-down runs on a new one: first the textbook
// queue statements, reported as "seed" (a claim that picks from the head of
// the ready index, then one fenced completion per job, a claim's worth sent
// as one pipelined batch), then the engine's own (queues.JobClaim resuming
// after the last key the loop took, queues.JobAckMany). jobs_per_second is
// the engine's statements: the floor the engine's burn-down is held to.
func Floor(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	phases := []struct {
		name string
		loop func(ctx context.Context, cfg Config, queue, owner string, done *atomic.Int64) error
	}{{"seed", seedFloorLoop}, {"engine", engineFloorLoop}}
	rates := make([]float64, len(phases))
	cpus := make([]time.Duration, len(phases))
	starts := make([]int64, len(phases))
	for i, p := range phases {
		var err error
		if starts[i], err = freshJobs(ctx, cfg); err != nil {
			return r, err
		}
		cfg.logf("floor: %s statements, %d jobs, %d loops, claims of %d", p.name, cfg.Jobs, cfg.PoolSize, cfg.Batch)
		rate, cpu, err := floorPhase(ctx, cfg, p.name, p.loop)
		if err != nil {
			return r, fmt.Errorf("%s statements: %w", p.name, err)
		}
		rates[i], cpus[i] = rate, cpu
	}
	r.Add("jobs", "jobs", cfg.Jobs, "")
	r.Add("loops", "claim/ack loops", cfg.PoolSize, "")
	r.Add("batch", "claim and ack batch", cfg.Batch, "jobs")
	r.Add("seed_jobs_per_second", "seed statements: claim from the head, one completion per job", rates[0], "jobs/s")
	r.Add("jobs_per_second", "engine statements: keyset claim, one ack per batch", rates[1], "jobs/s")
	r.Add("engine_over_seed", "engine / seed", ratio(rates[1], rates[0]), "")
	r.Add("client_cpu_us_per_job", "engine statements: this process's CPU time per job while they ran (user and system; the burn's engine_cpu_us_per_job)",
		float64(cpus[1].Microseconds())/float64(cfg.Jobs), "µs")
	r.Add("seed_start_bytes", "seed statements: jobs and its indexes at the start", starts[0], "bytes")
	r.Add("engine_start_bytes", "engine statements: jobs and its indexes at the start", starts[1], "bytes")
	return r, nil
}

// floorPhase fills a fresh queue and runs PoolSize loops over it until
// every job is done; it returns jobs per second and this process's CPU
// time while the loops ran.
//
// Each phase runs on connections of its own, opened for it, as the
// burn-down's are: a server process takes a page fault the first time it
// touches each page of the shared buffers, and a phase run on the
// connections of the one before it starts with those pages mapped. On the
// seed phase's connections the engine's statements took 0.01 page faults
// per job, against 0.22 in a burn-down on its new pool (docs/benchmarks-log.md, run
// 18), and were held to a floor the burn-down could not reach.
func floorPhase(ctx context.Context, cfg Config, name string,
	loop func(ctx context.Context, cfg Config, queue, owner string, done *atomic.Int64) error) (float64, time.Duration, error) {
	pcfg := cfg.Pool.Config().Copy()
	pcfg.ConnConfig.RuntimeParams["application_name"] = floorApplication(name)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return 0, 0, fmt.Errorf("connections of its own: %w", err)
	}
	defer pool.Close()
	cfg.Pool = pool
	queue := queueName("floor-" + name)
	defer deleteQueue(cfg, queue)
	if _, err := fill(ctx, cfg, queue, cfg.Jobs, []byte("{}")); err != nil {
		return 0, 0, fmt.Errorf("enqueue: %w", err)
	}
	cfg.logf("floor: %s statements working", name)
	ctx, cancel := context.WithTimeout(ctx, burnTimeout(cfg.Jobs))
	defer cancel()
	var done atomic.Int64
	errs := make([]error, cfg.PoolSize)
	var wg sync.WaitGroup
	cpuBefore := processCPU()
	start := time.Now()
	for w := range cfg.PoolSize {
		wg.Go(func() { errs[w] = loop(ctx, cfg, queue, fmt.Sprintf("floor-%d", w), &done) })
	}
	wg.Wait()
	work := time.Since(start)
	cpu := processCPU() - cpuBefore
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	if n := done.Load(); n != int64(cfg.Jobs) {
		return 0, 0, fmt.Errorf("%d of %d jobs done", n, cfg.Jobs)
	}
	return float64(cfg.Jobs) / work.Seconds(), cpu, nil
}

// floorApplication is the application_name of a floor phase's
// connections.
func floorApplication(phase string) string { return "console bench floor " + phase }

// seedFloorLoop claims with the textbook statement (seed_claim.sql) and
// completes each job with seed_complete.sql, one pipelined batch per
// claim, until nothing is ready.
func seedFloorLoop(ctx context.Context, cfg Config, queue, owner string, done *atomic.Int64) error {
	for ctx.Err() == nil {
		rows, err := cfg.Pool.Query(ctx, sqlText("seed_claim"), queue, cfg.Batch, owner, time.Minute.Milliseconds())
		if err != nil {
			return err
		}
		type claimed struct {
			id, generation int64
		}
		jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
			var c claimed
			var payload []byte
			var attempts, maxAttempts int
			err := row.Scan(&c.id, &payload, &attempts, &maxAttempts, &c.generation)
			return c, err
		})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		for _, j := range jobs {
			b.Queue(sqlText("seed_complete"), j.id, owner, j.generation)
		}
		br := cfg.Pool.SendBatch(ctx, b)
		for range jobs {
			tag, err := br.Exec()
			if err == nil && tag.RowsAffected() != 1 {
				err = queues.ErrLeaseLost
			}
			if err != nil {
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		done.Add(int64(len(jobs)))
	}
	return ctx.Err()
}

// engineFloorLoop claims with queues.JobClaim, resuming after the last key
// it took (from the head again after a short claim or floorRescan, as the
// engine does), and acks each claim with one queues.JobAckMany.
func engineFloorLoop(ctx context.Context, cfg Config, queue, owner string, done *atomic.Int64) error {
	var after *queues.ClaimKey
	var since time.Time
	for ctx.Err() == nil {
		if after != nil && time.Since(since) >= floorRescan {
			after = nil
		}
		jobs, err := queues.JobClaim(ctx, cfg.Pool, queues.JobClaimParams{
			Queue: queue, Limit: cfg.Batch, Owner: owner, Lease: time.Minute, After: after,
		})
		if err != nil {
			return err
		}
		if len(jobs) == 0 && after == nil {
			return nil
		}
		switch {
		case len(jobs) < cfg.Batch:
			after = nil
		case after == nil:
			since = time.Now()
			fallthrough
		default:
			after = queues.NextClaimKey(after, jobs)
		}
		if len(jobs) == 0 {
			continue
		}
		ids := make([]int64, len(jobs))
		gens := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i], gens[i] = j.ID, j.LeaseGeneration
		}
		acked, err := queues.JobAckMany(ctx, cfg.Pool, owner, ids, gens)
		if err != nil {
			return err
		}
		if len(acked) != len(ids) {
			return fmt.Errorf("acked %d of %d claimed jobs: %w", len(acked), len(ids), queues.ErrLeaseLost)
		}
		done.Add(int64(len(ids)))
	}
	return ctx.Err()
}
