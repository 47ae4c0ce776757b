package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/queues"
)

// The fairness mode's small tenants: fairTenants of them, fairSmall jobs
// each, enqueued after the large tenant's burst.
const (
	fairTenants = 10
	fairSmall   = 100
)

// Fairness is tenant fairness: one tenant enqueues cfg.Jobs no-op jobs,
// then ten tenants enqueue 100 each, and a Client works the queue. It
// reports how many jobs had been handled when the small tenants' last job
// was, against their fair share (every tenant with work gets an equal part
// of each claim, so eleven tenants finish the small ones' 1,000 jobs after
// about 1,100 handled; first come, first served after cfg.Jobs + 1,000), and
// the burn-down of the whole queue against the same number of jobs without
// tenants, burnt down first in the same run.
func Fairness(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	total := cfg.Jobs + fairTenants*fairSmall

	plain := queueName("plain")
	defer deleteQueue(cfg, plain)
	cfg.logf("fairness: %d jobs without tenants", total)
	if _, err := fill(ctx, cfg, plain, total, []byte("{}")); err != nil {
		return r, fmt.Errorf("enqueue: %w", err)
	}
	if err := analyzeJobs(ctx, cfg); err != nil {
		return r, err
	}
	plainTook, _, err := burnTenants(ctx, cfg, plain, total)
	if err != nil {
		return r, err
	}
	deleteQueue(cfg, plain)
	if err := vacuumJobs(ctx, cfg); err != nil {
		return r, err
	}

	shared := queueName("tenants")
	defer deleteQueue(cfg, shared)
	cfg.logf("fairness: tenant big enqueues %d jobs, then %d tenants %d each", cfg.Jobs, fairTenants, fairSmall)
	if _, err := fillTenant(ctx, cfg, shared, "big", cfg.Jobs, []byte("{}")); err != nil {
		return r, fmt.Errorf("enqueue for big: %w", err)
	}
	for i := range fairTenants {
		tenant := fmt.Sprintf("small-%02d", i)
		if _, err := fillTenant(ctx, cfg, shared, tenant, fairSmall, []byte("{}")); err != nil {
			return r, fmt.Errorf("enqueue for %s: %w", tenant, err)
		}
	}
	if err := analyzeJobs(ctx, cfg); err != nil {
		return r, err
	}
	fairTook, small, err := burnTenants(ctx, cfg, shared, total)
	if err != nil {
		return r, err
	}
	share := (fairTenants + 1) * fairSmall
	r.Add("jobs", "jobs of the large tenant", cfg.Jobs, "")
	r.Add("small_tenants", "small tenants x jobs", fmt.Sprintf("%d x %d", fairTenants, fairSmall), "")
	r.Add("workers", "workers (jobs in flight)", cfg.Workers, "")
	r.Add("max_claim", "largest claim", cfg.Batch, "jobs")
	r.Add("small_done_after_jobs", "jobs handled when the small tenants' last one was", small.doneAfter, "jobs")
	r.Add("fair_share_jobs", "fair share (11 tenants x 100)", share, "jobs")
	r.Add("fifo_jobs", "first come, first served", total, "jobs")
	r.Add("small_done_vs_fair_share", "small tenants' finish / fair share", float64(small.doneAfter)/float64(share), "x")
	r.Add("small_done_seconds", "small tenants all done after", small.at.Seconds(), "s")
	r.Add("plain_seconds", "burn-down without tenants", plainTook.Seconds(), "s")
	r.Add("tenants_seconds", "burn-down with tenants (fair claims)", fairTook.Seconds(), "s")
	r.Add("plain_jobs_per_second", "throughput without tenants", float64(total)/plainTook.Seconds(), "jobs/s")
	r.Add("tenants_jobs_per_second", "throughput with tenants", float64(total)/fairTook.Seconds(), "jobs/s")
	r.Add("tenants_vs_plain", "throughput with tenants / without", plainTook.Seconds()/fairTook.Seconds(), "x")
	return r, nil
}

// analyzeJobs gives the planner the statistics of the jobs just enqueued,
// as autovacuum would within a minute: both phases start from a table the
// planner knows.
func analyzeJobs(ctx context.Context, cfg Config) error {
	if _, err := cfg.Pool.Exec(ctx, "ANALYZE jobs"); err != nil {
		return fmt.Errorf("analyze jobs: %w", err)
	}
	return nil
}

// smallDone is when the small tenants' last job was handled: after how
// many handled jobs, and how long after the start.
type smallDone struct {
	doneAfter int64
	at        time.Duration
}

// burnTenants works queue's n jobs with a fresh Client until it had every
// ack committed (then checks none is ready or running), and says when the
// small tenants' jobs were done.
func burnTenants(ctx context.Context, cfg Config, queue string, n int) (time.Duration, smallDone, error) {
	var small smallDone
	var handled, smallLeft atomic.Int64
	smallLeft.Store(fairTenants * fairSmall)
	var smallAt, smallAfter atomic.Int64
	reg := prometheus.NewRegistry()
	c, err := newClient(cfg, queue, reg)
	if err != nil {
		return 0, small, err
	}
	start := time.Now()
	c.Handle("noop", func(_ context.Context, j *queues.Job) error {
		h := handled.Add(1)
		if j.TenantID != nil && *j.TenantID != "big" && smallLeft.Add(-1) == 0 {
			smallAfter.Store(h)
			smallAt.Store(int64(time.Since(start)))
		}
		return nil
	})
	if err := c.Start(ctx); err != nil {
		return 0, small, err
	}
	defer stopClient(c)
	if err := awaitAcked(ctx, reg, n, &handled); err != nil {
		return 0, small, err
	}
	took := time.Since(start)
	stopClient(c)
	if err := checkBurnt(ctx, cfg, queue, n); err != nil {
		return 0, small, err
	}
	small.at, small.doneAfter = time.Duration(smallAt.Load()), smallAfter.Load()
	return took, small, nil
}
