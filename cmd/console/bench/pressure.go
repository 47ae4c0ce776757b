package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/queues"
)

// pressureSampleEvery is how often a pressure phase reads the dead tuples.
const pressureSampleEvery = 10 * time.Second

// claimMarker starts the text of the engine's claim statement (its file's
// header): the claim tracer times the statements that start with it.
const claimMarker = "-- JobClaim:"

// loadSeries is one phase of pressure by minute of its window: jobs whose
// handler started in the minute, the claim statements that ended in it, and
// the dead tuples sampled in it.
type loadSeries struct {
	start   atomic.Int64 // Unix ns of the window's start; 0 until begin
	window  time.Duration
	minutes []minuteSeries
	whole   minuteSeries // the window, for the phase's quantiles
}

type minuteSeries struct {
	jobs         atomic.Int64
	claim, start latencyHistogram // claim statement; enqueue to handler start
	// headClaim is the claim statements that started from the head of the
	// queue (no cursor), a subset of claim: behind a pinned horizon each
	// walks the entry of every job claimed since the pin.
	headClaim latencyHistogram
	dead      atomic.Int64 // the last sample of the minute, -1 for none
}

func newLoadSeries(window time.Duration) *loadSeries {
	s := &loadSeries{window: window, minutes: make([]minuteSeries, (window+time.Minute-1)/time.Minute)}
	for i := range s.minutes {
		s.minutes[i].dead.Store(-1)
	}
	return s
}

func (s *loadSeries) begin(t time.Time) { s.start.Store(t.UnixNano()) }

// minute is the minute of the window t falls in, or nil outside it.
func (s *loadSeries) minute(t time.Time) *minuteSeries {
	start := s.start.Load()
	if start == 0 {
		return nil
	}
	e := time.Duration(t.UnixNano() - start)
	if e < 0 || e >= s.window {
		return nil
	}
	return &s.minutes[e/time.Minute]
}

// deadAt records a dead-tuple sample taken at t in its minute; the sample
// taken just after the window goes to the last minute.
func (s *loadSeries) deadAt(t time.Time, n int64) {
	if start := s.start.Load(); start != 0 && t.UnixNano() >= start {
		i := min(time.Duration(t.UnixNano()-start)/time.Minute, time.Duration(len(s.minutes)-1))
		s.minutes[i].dead.Store(n)
	}
}

// job counts a handler start at now; inWindow says its enqueue stamp is
// inside the window (the prefill's are not), so its latency counts.
func (s *loadSeries) job(now, stamp time.Time, inWindow bool) {
	m := s.minute(now)
	if m == nil {
		return
	}
	m.jobs.Add(1)
	s.whole.jobs.Add(1)
	if inWindow {
		m.start.record(now.Sub(stamp))
		s.whole.start.record(now.Sub(stamp))
	}
}

func (s *loadSeries) claim(end time.Time, d time.Duration, head bool) {
	if m := s.minute(end); m != nil {
		m.claim.record(d)
		s.whole.claim.record(d)
		if head {
			m.headClaim.record(d)
			s.whole.headClaim.record(d)
		}
	}
}

// claimTracer times the engine's claim statements on a pool into the series
// of the phase running (none between phases).
type claimTracer struct{ series atomic.Pointer[loadSeries] }

type claimStartKey struct{}

// claimStart is when a claim statement was sent and whether it started
// from the head of the queue.
type claimStart struct {
	at   time.Time
	head bool
}

// claimCursorID is the index of the claim's cursor id ($7) among its
// arguments: nil when the claim starts from the head.
const claimCursorID = 6

func (c *claimTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !strings.HasPrefix(data.SQL, claimMarker) {
		return ctx
	}
	head := len(data.Args) > claimCursorID && data.Args[claimCursorID] == nil
	return context.WithValue(ctx, claimStartKey{}, claimStart{at: time.Now(), head: head})
}

func (c *claimTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	st, ok := ctx.Value(claimStartKey{}).(claimStart)
	if !ok || data.Err != nil {
		return
	}
	if s := c.series.Load(); s != nil {
		now := time.Now()
		s.claim(now, now.Sub(st.at), st.head)
	}
}

// deadSample is one read of the dead tuples, at some time into a phase.
type deadSample struct {
	at         time.Duration
	total, job int64
}

// sampleDead reads the dead tuples at the start, every pressureSampleEvery
// and once more when ctx ends (with its own deadline), into the series'
// minutes and the returned samples.
func sampleDead(ctx context.Context, cfg Config, s *loadSeries, begun time.Time) ([]deadSample, error) {
	var out []deadSample
	read := func(ctx context.Context) error {
		var d deadSample
		if err := cfg.Pool.QueryRow(ctx, sqlText("queue_dead_tuples")).Scan(&d.total, &d.job); err != nil {
			return fmt.Errorf("read the dead tuples: %w", err)
		}
		now := time.Now()
		d.at = now.Sub(begun)
		out = append(out, d)
		s.deadAt(now, d.total)
		return nil
	}
	tick := time.NewTicker(pressureSampleEvery)
	defer tick.Stop()
	for {
		if err := read(ctx); err != nil && ctx.Err() == nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return out, read(fctx)
		case <-tick.C:
		}
	}
}

// pressurePhase is what one phase of pressure measured.
type pressurePhase struct {
	load   loadResult
	series *loadSeries
	dead   []deadSample
	// holderAge is how many xids were assigned after the holder's write,
	// read at the end of the phase (held phase only).
	holderAge int64
}

func (p pressurePhase) jobsPerSecond() float64 {
	return float64(p.series.whole.jobs.Load()) / p.series.window.Seconds()
}

func (p pressurePhase) lastDead() deadSample {
	if len(p.dead) == 0 {
		return deadSample{}
	}
	return p.dead[len(p.dead)-1]
}

// Pressure runs the continuous load for cfg.Duration with the horizon free
// (clean), then for cfg.Hold while another session holds a writing
// transaction open (pressure), and reports each phase and each minute:
// throughput, the claim statement's latency (from the engine sending it to
// its rows read, timed on the pool), enqueue to handler start, and the dead
// tuples every pressureSampleEvery. Both phases start from a vacuumed table
// and a fresh queue.
func Pressure(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	backlog := continuousBacklog(cfg)
	// A pool of the same size as cfg.Pool whose claims are timed.
	pcfg, err := queues.PoolConfig(cfg.URL)
	if err != nil {
		return r, err
	}
	pcfg.MaxConns = int32(cfg.PoolSize)
	tracer := &claimTracer{}
	pcfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return r, fmt.Errorf("open the timed pool: %w", err)
	}
	defer pool.Close()
	load := cfg
	load.Pool = pool

	phase := func(name string, d time.Duration, hold bool) (pressurePhase, error) {
		p := pressurePhase{series: newLoadSeries(d)}
		queue := queueName(name)
		defer deleteQueue(cfg, queue)
		if err := vacuumJobs(ctx, cfg); err != nil {
			return p, err
		}
		var holder uint32
		if hold {
			release, pid, err := holdXmin(ctx, cfg, true)
			if err != nil {
				return p, err
			}
			defer release()
			holder = pid
		}
		if cfg.Rate > 0 {
			cfg.logf("pressure: %s, %s of work at %d jobs/s arriving, %d workers", name, d, cfg.Rate, cfg.Workers)
		} else {
			cfg.logf("pressure: %s, %s of insert+work, backlog %d, %d workers", name, d, backlog, cfg.Workers)
		}
		tracer.series.Store(p.series)
		defer tracer.series.Store(nil)
		sctx, stopSampler := context.WithCancel(ctx)
		var sampleErr error
		var wg sync.WaitGroup
		begun := time.Now()
		wg.Go(func() { p.dead, sampleErr = sampleDead(sctx, cfg, p.series, begun) })
		p.load, err = runLoad(ctx, load, queue, d, backlog, p.series, cfg.Rate)
		stopSampler()
		wg.Wait()
		if err != nil {
			return p, err
		}
		if sampleErr != nil {
			return p, sampleErr
		}
		if hold {
			err := cfg.Pool.QueryRow(ctx, sqlText("holder_xid_age"), int64(holder)).Scan(&p.holderAge)
			if errors.Is(err, pgx.ErrNoRows) {
				return p, fmt.Errorf("the xmin holder's session ended before the phase did")
			}
			if err != nil {
				return p, fmt.Errorf("xmin holder's age: %w", err)
			}
		}
		cfg.logf("pressure: %s: %.0f jobs/s, claim p99 %.2f ms, %d dead tuples", name,
			p.jobsPerSecond(), ms(p.series.whole.claim.quantile(0.99)), p.lastDead().total)
		return p, nil
	}
	clean, err := phase("clean", cfg.Duration, false)
	if err != nil {
		return r, err
	}
	held, err := phase("pressure", cfg.Hold, true)
	if err != nil {
		return r, err
	}
	pressureReport(&r, clean, held, cfg.Rate > 0)
	if cfg.Rate > 0 {
		rateReport(&r, cfg.Rate, clean, held)
	}
	r.Add("holder_xid_age", "xids assigned after the holder's write, at the end", held.holderAge, "")
	r.Add("workers", "workers (jobs in flight)", cfg.Workers, "")
	r.Add("backlog", "backlog kept by the inserter", backlog, "jobs")
	r.Add("jobs_inserted", "jobs inserted (both phases)", clean.load.inserted+held.load.inserted, "")
	return r, nil
}

// pressureReport adds both phases' figures, their ratios and every minute.
// kept_percent is the pressure phase's throughput against the clean one's,
// or at a fixed arrival rate (arrivals) the jobs started under pressure
// against those that arrived.
func pressureReport(r *Report, clean, held pressurePhase, arrivals bool) {
	q := func(h *latencyHistogram, p float64) float64 { return ms(h.quantile(p)) }
	for _, p := range []struct {
		name string
		ph   pressurePhase
	}{{"clean", clean}, {"pressure", held}} {
		w := &p.ph.series.whole
		r.Add("seconds_"+p.name, p.name+": window", p.ph.series.window.Seconds(), "s")
		r.Add("jobs_"+p.name, p.name+": jobs started in the window", w.jobs.Load(), "")
		r.Add("jobs_per_second_"+p.name, p.name+": throughput", p.ph.jobsPerSecond(), "jobs/s")
		r.Add("claim_p50_ms_"+p.name, p.name+": claim statement p50", q(&w.claim, 0.5), "ms")
		r.Add("claim_p99_ms_"+p.name, p.name+": claim statement p99", q(&w.claim, 0.99), "ms")
		r.Add("claims_"+p.name, p.name+": claim statements timed", w.claim.n.Load(), "")
		r.Add("claims_head_"+p.name, p.name+": claim statements from the head of the queue", w.headClaim.n.Load(), "")
		r.Add("claim_head_p99_ms_"+p.name, p.name+": claim statement p99, from the head", q(&w.headClaim, 0.99), "ms")
		r.Add("start_p50_ms_"+p.name, p.name+": enqueue-to-start p50", q(&w.start, 0.5), "ms")
		r.Add("start_p99_ms_"+p.name, p.name+": enqueue-to-start p99", q(&w.start, 0.99), "ms")
		last := p.ph.lastDead()
		r.Add("dead_tuples_"+p.name, p.name+": dead tuples at the end, all tables", last.total, "")
		r.Add("dead_tuples_jobs_"+p.name, p.name+": dead tuples at the end, jobs", last.job, "")
	}
	if arrivals {
		r.Add("kept_percent", "jobs started under pressure, of those that arrived",
			100*ratio(float64(held.series.whole.jobs.Load()), float64(held.load.inserted)), "%")
	} else {
		r.Add("kept_percent", "throughput kept under pressure", 100*ratio(held.jobsPerSecond(), clean.jobsPerSecond()), "%")
	}
	r.Add("claim_p99_ratio", "claim p99, pressure / clean",
		ratio(q(&held.series.whole.claim, 0.99), q(&clean.series.whole.claim, 0.99)), "")
	r.Add("start_p99_ratio", "enqueue-to-start p99, pressure / clean",
		ratio(q(&held.series.whole.start, 0.99), q(&clean.series.whole.start, 0.99)), "")
	for _, p := range []struct {
		name string
		ph   pressurePhase
	}{{"clean", clean}, {"pressure", held}} {
		for i := range p.ph.series.minutes {
			r.Add(fmt.Sprintf("%s_minute_%d", p.name, i+1), fmt.Sprintf("%s: minute %d", p.name, i+1),
				p.ph.series.minuteFigures(i), "")
		}
		r.Add("dead_tuples_series_"+p.name, p.name+": dead tuples every ~10 s", deadSeries(p.ph.dead), "")
	}
}

// rateReport adds the figures of a fixed arrival rate: the jobs that
// arrived in each phase and the share of them that started in it. At a
// fixed rate kept_percent is that share under pressure: the throughput
// kept, measured against what arrived rather than against the clean phase.
func rateReport(r *Report, rate int, clean, held pressurePhase) {
	r.Add("rate", "arrival rate, both phases", rate, "jobs/s")
	for _, p := range []struct {
		name string
		ph   pressurePhase
	}{{"clean", clean}, {"pressure", held}} {
		r.Add("arrived_"+p.name, p.name+": jobs that arrived in the window", p.ph.load.inserted, "")
		r.Add("completed_percent_"+p.name, p.name+": jobs started in the window, of those that arrived",
			100*ratio(float64(p.ph.series.whole.jobs.Load()), float64(p.ph.load.inserted)), "%")
	}
}

// minuteFigures is one minute of a phase, as the report shows it.
type minuteFigures struct {
	Jobs          int64   `json:"jobs"`
	JobsPerSecond float64 `json:"jobs_per_second"`
	ClaimP50MS    float64 `json:"claim_p50_ms"`
	ClaimP99MS    float64 `json:"claim_p99_ms"`
	StartP50MS    float64 `json:"start_p50_ms"`
	StartP99MS    float64 `json:"start_p99_ms"`
	// HeadClaims are the claims that started from the head of the queue,
	// HeadP99MS their p99.
	HeadClaims int64   `json:"head_claims"`
	HeadP99MS  float64 `json:"head_p99_ms"`
	// DeadTuples is the minute's last sample, -1 when none fell in it.
	DeadTuples int64 `json:"dead_tuples"`
}

func (m minuteFigures) String() string {
	return fmt.Sprintf("%s jobs/s, claim p50 %s p99 %s ms (%d from the head, p99 %s ms), start p50 %s p99 %s ms, dead tuples %d",
		formatValue(m.JobsPerSecond), formatValue(m.ClaimP50MS), formatValue(m.ClaimP99MS),
		m.HeadClaims, formatValue(m.HeadP99MS),
		formatValue(m.StartP50MS), formatValue(m.StartP99MS), m.DeadTuples)
}

func (s *loadSeries) minuteFigures(i int) minuteFigures {
	m := &s.minutes[i]
	// The last minute of a window that is not whole minutes is shorter.
	span := min(time.Minute, s.window-time.Duration(i)*time.Minute)
	return minuteFigures{
		Jobs:          m.jobs.Load(),
		JobsPerSecond: float64(m.jobs.Load()) / span.Seconds(),
		ClaimP50MS:    ms(m.claim.quantile(0.5)),
		ClaimP99MS:    ms(m.claim.quantile(0.99)),
		StartP50MS:    ms(m.start.quantile(0.5)),
		StartP99MS:    ms(m.start.quantile(0.99)),
		HeadClaims:    m.headClaim.n.Load(),
		HeadP99MS:     ms(m.headClaim.quantile(0.99)),
		DeadTuples:    m.dead.Load(),
	}
}

// deadSeries is the samples as "0s 12, 10s 3400, ...".
func deadSeries(ds []deadSample) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprintf("%.0fs %d", d.at.Seconds(), d.total)
	}
	return strings.Join(parts, ", ")
}
