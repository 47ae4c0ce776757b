package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
)

// scaleQueues is how many queues the scale table spreads its jobs over.
const scaleQueues = 5

// scaleLayout is the jobs table of one scale size: the live set is the same
// at every size, only the finished history grows.
type scaleLayout struct {
	size, ready, running, dead, done int
}

func layoutFor(small, size int) scaleLayout {
	l := scaleLayout{
		size:    size,
		ready:   min(1000, max(100, small/10)),
		running: min(10, max(1, small/100)),
		dead:    min(100, max(7, small/100)),
	}
	l.done = size - l.ready - l.running - l.dead
	return l
}

// build empties jobs and fills it in id order (so in age order): the dead
// letters first (they linger while history piles up behind them), then the
// done history, then the running and ready jobs (the newest rows). It ends
// with VACUUM ANALYZE, as autovacuum would have.
func (l scaleLayout) build(ctx context.Context, cfg Config) error {
	for _, q := range []struct {
		sql string
		n   int
	}{
		{`TRUNCATE jobs`, 0},
		{sqlText("scale_dead"), l.dead},
		{sqlText("scale_done"), l.done},
		{sqlText("scale_running"), l.running},
		{sqlText("scale_ready"), l.ready},
	} {
		var err error
		if q.n > 0 {
			_, err = cfg.Pool.Exec(ctx, q.sql, q.n)
		} else {
			_, err = cfg.Pool.Exec(ctx, q.sql)
		}
		if err != nil {
			return fmt.Errorf("build %d rows: %w", l.size, err)
		}
	}
	return vacuumJobs(ctx, cfg)
}

// scaleOp is one measured operation: run returns how long the timed part
// took.
type scaleOp struct {
	key, label string
	reps       int
	run        func(ctx context.Context, i int) (time.Duration, error)
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func scaleOps(cfg Config, l scaleLayout, diag *diagnostics.Diagnostics) []scaleOp {
	claimLimit := max(1, min(10, l.ready/40))
	return []scaleOp{
		{"claim", fmt.Sprintf("claim of %d (JobClaim)", claimLimit), 20, func(ctx context.Context, i int) (time.Duration, error) {
			var jobs []queues.Job
			d, err := timed(func() (err error) {
				jobs, err = queues.JobClaim(ctx, cfg.Pool, queues.JobClaimParams{
					Queue: fmt.Sprintf("scale-%d", i%scaleQueues), Limit: claimLimit, Owner: "scale-bench", Lease: time.Minute,
				})
				return err
			})
			if err != nil {
				return d, err
			}
			if len(jobs) == 0 {
				return d, errors.New("claim found no ready job")
			}
			ids, gens := make([]int64, len(jobs)), make([]int64, len(jobs))
			for k, j := range jobs {
				ids[k], gens[k] = j.ID, j.LeaseGeneration
			}
			_, err = queues.JobAckMany(ctx, cfg.Pool, "scale-bench", ids, gens)
			return d, err
		}},
		{"findings_round", "findings round (overview)", 5, func(ctx context.Context, _ int) (time.Duration, error) {
			r := diag.Round(ctx)
			for _, u := range r.Unavailable {
				cfg.logf("scale: findings check %s unavailable: %s", u.Check, u.Status)
			}
			return r.Took, nil
		}},
		{"jobs_list", "jobs list, first page (JobList)", 20, func(ctx context.Context, _ int) (time.Duration, error) {
			return timed(func() error { _, err := queues.JobList(ctx, cfg.Pool, queues.JobListParams{}); return err })
		}},
		{"jobs_list_dead", "jobs list, status=dead (JobList)", 20, func(ctx context.Context, _ int) (time.Duration, error) {
			return timed(func() error {
				_, err := queues.JobList(ctx, cfg.Pool, queues.JobListParams{Status: queues.StatusDead})
				return err
			})
		}},
		{"dead_letter_groups", "dead-letter grouping (DeadLetterGroups)", 10, func(ctx context.Context, _ int) (time.Duration, error) {
			return timed(func() error { _, err := queues.DeadLetterGroups(ctx, cfg.Pool, ""); return err })
		}},
	}
}

// Scale measures the same operations at cfg.Small and cfg.Large job rows
// (the same live set of ready, running and dead jobs; the rest done) and
// reports the median of each and the ratio large/small. It rebuilds the jobs
// table, so it only runs on a scratch database.
func Scale(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	if !cfg.Scratch {
		return r, errors.New("scale empties and refills the jobs table: run it on a scratch database (not with --force)")
	}
	if cfg.Large <= cfg.Small {
		return r, fmt.Errorf("the large size (%d) must exceed the small one (%d)", cfg.Large, cfg.Small)
	}
	if cfg.Small < 200 {
		return r, fmt.Errorf("the small size must be at least 200 rows, not %d", cfg.Small)
	}
	diag, err := diagnostics.Open(ctx, cfg.URL, diagnostics.Config{})
	if err != nil {
		return r, err
	}
	defer diag.Close()

	medians := map[string][2]time.Duration{}
	var ops []scaleOp
	for s, size := range []int{cfg.Small, cfg.Large} {
		l := layoutFor(cfg.Small, size)
		cfg.logf("scale: building %d job rows (%d ready, %d running, %d dead, %d done)", size, l.ready, l.running, l.dead, l.done)
		built := time.Now()
		if err := l.build(ctx, cfg); err != nil {
			return r, err
		}
		cfg.logf("scale: built in %s; measuring", time.Since(built).Round(time.Millisecond))
		ops = scaleOps(cfg, l, diag)
		for _, op := range ops {
			// One untimed run warms caches and plans (and gives the findings
			// round its WAL anchor).
			if _, err := op.run(ctx, 0); err != nil {
				return r, fmt.Errorf("%s at %d rows: %w", op.key, size, err)
			}
			ds := make([]time.Duration, 0, op.reps)
			for i := range op.reps {
				d, err := op.run(ctx, i+1)
				if err != nil {
					return r, fmt.Errorf("%s at %d rows: %w", op.key, size, err)
				}
				ds = append(ds, d)
			}
			m := medians[op.key]
			m[s] = median(ds)
			medians[op.key] = m
		}
	}
	if _, err := cfg.Pool.Exec(ctx, "TRUNCATE jobs"); err != nil {
		return r, err
	}
	r.Add("small_rows", "small table", cfg.Small, "job rows")
	r.Add("large_rows", "large table", cfg.Large, "job rows")
	worst := 0.0
	for _, op := range ops {
		m := medians[op.key]
		q := ratio(ms(m[1]), ms(m[0]))
		worst = max(worst, q)
		r.Add(op.key+"_small_ms", op.label+", small", ms(m[0]), "ms")
		r.Add(op.key+"_large_ms", op.label+", large", ms(m[1]), "ms")
		r.Add(op.key+"_ratio", op.label+", large/small", q, "")
	}
	r.Add("worst_ratio", "worst large/small", worst, "")
	return r, nil
}
