// Command river-pressure is `console bench pressure` for River: the same
// continuous load (an inserter keeping a bounded backlog, a client working
// it) for a clean phase, then for a phase while another session holds a
// writing transaction open, with the same figures under the same JSON keys,
// so scripts/bench-pressure.sh can print both engines side by side.
//
// It is a module of its own so the console's module never depends on River.
//
//	go run . --database-url postgres://... --duration 10m --hold 10m --json
//
// The database should hold nothing but River's tables: the dead tuples are
// summed over every table of it. River's migrations run first (rivermigrate).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// config is the command line.
type config struct {
	url           string
	duration      time.Duration // clean phase
	hold          time.Duration // pressure phase
	pool          int
	workers       int
	backlog       int
	rate          int // jobs arriving per second; 0: keep the backlog full
	fetchCooldown time.Duration
	fetchPoll     time.Duration
	asJSON        bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "river-pressure:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c config
	fs := flag.NewFlagSet("river-pressure", flag.ContinueOnError)
	fs.StringVar(&c.url, "database-url", os.Getenv("DATABASE_URL"), "database holding only River's tables (default $DATABASE_URL)")
	fs.DurationVar(&c.duration, "duration", 10*time.Minute, "clean phase")
	fs.DurationVar(&c.hold, "hold", 10*time.Minute, "phase run while a writing transaction holds the xmin horizon")
	fs.IntVar(&c.pool, "pool", 4, "database connections of River's pool")
	fs.IntVar(&c.workers, "workers", 2000, "River's MaxWorkers (jobs in flight)")
	fs.IntVar(&c.backlog, "backlog", 0, "jobs the inserter keeps waiting (default max(2000, 10*workers), as the console's)")
	fs.IntVar(&c.rate, "rate", 0, "jobs arriving per second, in both phases (0: the inserter keeps the backlog full)")
	fs.DurationVar(&c.fetchCooldown, "fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	fs.DurationVar(&c.fetchPoll, "fetch-poll-interval", 20*time.Millisecond, "River's FetchPollInterval")
	fs.BoolVar(&c.asJSON, "json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.url == "" {
		return errors.New("--database-url (or DATABASE_URL) is needed: a database for River's tables")
	}
	if c.duration <= 0 || c.hold <= 0 || c.pool < 1 || c.workers < 1 || c.workers > river.QueueNumWorkersMax {
		return fmt.Errorf("--duration, --hold and --pool must be positive, --workers within 1..%d", river.QueueNumWorkersMax)
	}
	if c.backlog <= 0 {
		c.backlog = max(2000, 10*c.workers)
	}
	if c.rate < 0 || c.rate > 1_000_000 {
		return errors.New("--rate is jobs arriving per second: 1 to 1,000,000, or 0 to keep the backlog full instead")
	}
	rep, err := pressure(ctx, c, stderr)
	if err != nil {
		return err
	}
	if c.asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return rep.writeTable(stdout)
}

// noopArgs is the benchmark's job: its enqueue time in Unix nanoseconds.
type noopArgs struct {
	Stamp int64 `json:"s"`
}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	series *atomic.Pointer[loadSeries]
	window *atomic.Int64 // Unix ns of the phase's start: older stamps (the prefill) are not timed
}

func (w *noopWorker) Work(_ context.Context, j *river.Job[noopArgs]) error {
	now := time.Now()
	if s := w.series.Load(); s != nil {
		s.job(now, time.Unix(0, j.Args.Stamp), j.Args.Stamp >= w.window.Load())
	}
	return nil
}

// claimTracer times River's fetch (JobGetAvailable) on the pool.
type claimTracer struct{ series atomic.Pointer[loadSeries] }

type claimStartKey struct{}

func (c *claimTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(data.SQL, "name: JobGetAvailable") {
		return ctx
	}
	return context.WithValue(ctx, claimStartKey{}, time.Now())
}

func (c *claimTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	t, ok := ctx.Value(claimStartKey{}).(time.Time)
	if !ok || data.Err != nil {
		return
	}
	if s := c.series.Load(); s != nil {
		now := time.Now()
		s.claim(now, now.Sub(t))
	}
}

const insertBatch = 1000

func stamped(n int) []river.InsertManyParams { return stampedAt(n, time.Now()) }

func stampedAt(n int, at time.Time) []river.InsertManyParams {
	ps := make([]river.InsertManyParams, n)
	for i := range ps {
		ps[i] = river.InsertManyParams{Args: noopArgs{Stamp: at.UnixNano()}}
	}
	return ps
}

// arrivalTick is how often a fixed-rate inserter inserts the jobs due.
const arrivalTick = 5 * time.Millisecond

// arrivalsDue is how many jobs have arrived by now at rate per second from
// start.
func arrivalsDue(start, now time.Time, rate int) int64 {
	return int64(now.Sub(start).Seconds() * float64(rate))
}

// arrivalTime is when job i (from 0) arrives at rate per second from start.
func arrivalTime(start time.Time, i int64, rate int) time.Time {
	return start.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))
}

func pressure(ctx context.Context, c config, progress io.Writer) (report, error) {
	var r report
	logf := func(format string, args ...any) { fmt.Fprintf(progress, "river-pressure: "+format+"\n", args...) }
	pcfg, err := pgxpool.ParseConfig(c.url)
	if err != nil {
		return r, fmt.Errorf("parse --database-url: %w", err)
	}
	pcfg.MaxConns = int32(c.pool)
	tracer := &claimTracer{}
	pcfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return r, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return r, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return r, fmt.Errorf("migrate River: %w", err)
	}
	var window atomic.Int64
	workers := river.NewWorkers()
	worker := &noopWorker{series: &tracer.series, window: &window}
	river.AddWorker(workers, worker)
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     c.fetchCooldown,
		FetchPollInterval: c.fetchPoll,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.workers}},
		Workers:           workers,
	})
	if err != nil {
		return r, err
	}

	phase := func(name string, d time.Duration, hold bool) (pressurePhase, error) {
		p := pressurePhase{series: newLoadSeries(d)}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, _ = pool.Exec(cctx, "DELETE FROM river_job")
		}()
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) river_job"); err != nil {
			return p, fmt.Errorf("vacuum river_job: %w", err)
		}
		var holder uint32
		if hold {
			release, pid, err := holdXmin(ctx, c.url)
			if err != nil {
				return p, err
			}
			defer release()
			holder = pid
		}
		prefill := c.backlog
		if c.rate > 0 {
			// A fixed arrival rate from the window's start, no prefill, no
			// backlog cap: each batch is stamped with the time its first job
			// was due, so a late insert counts against enqueue to start.
			prefill = 0
			logf("%s, %s of work at %d jobs/s arriving, %d workers", name, d, c.rate, c.workers)
		} else {
			logf("%s, %s of insert+work, backlog %d, %d workers", name, d, c.backlog, c.workers)
		}
		for done := 0; done < prefill; done += insertBatch {
			if _, err := client.InsertManyFast(ctx, stamped(min(insertBatch, c.backlog-done))); err != nil {
				return p, fmt.Errorf("prefill: %w", err)
			}
		}
		var inserted atomic.Int64
		inserted.Store(int64(prefill))
		start := time.Now()
		window.Store(start.UnixNano())
		p.series.begin(start)
		tracer.series.Store(p.series)
		defer tracer.series.Store(nil)
		sctx, stopSampler := context.WithCancel(ctx)
		var sampleErr error
		var wg sync.WaitGroup
		wg.Go(func() { p.dead, sampleErr = sampleDead(sctx, pool, p.series, start) })
		if err := client.Start(ctx); err != nil {
			stopSampler()
			wg.Wait()
			return p, err
		}
		insCtx, stopInserter := context.WithDeadline(ctx, start.Add(d))
		var insErr error
		wg.Go(func() {
			for c.rate > 0 && insCtx.Err() == nil {
				n := min(arrivalsDue(start, time.Now(), c.rate)-inserted.Load(), insertBatch)
				if n <= 0 {
					select {
					case <-insCtx.Done():
					case <-time.After(arrivalTick):
					}
					continue
				}
				got, err := client.InsertManyFast(insCtx, stampedAt(int(n), arrivalTime(start, inserted.Load(), c.rate)))
				inserted.Add(int64(got))
				if err != nil && insCtx.Err() == nil {
					insErr = err
					return
				}
			}
			for c.rate <= 0 && insCtx.Err() == nil {
				if inserted.Load()-p.series.handled.Load() >= int64(c.backlog) {
					select {
					case <-insCtx.Done():
					case <-time.After(2 * time.Millisecond):
					}
					continue
				}
				n, err := client.InsertManyFast(insCtx, stamped(insertBatch))
				inserted.Add(int64(n))
				if err != nil && insCtx.Err() == nil {
					insErr = err
					return
				}
			}
		})
		<-insCtx.Done()
		stopInserter()
		sctx2, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		stopErr := client.Stop(sctx2)
		cancel()
		stopSampler()
		wg.Wait()
		p.inserted = inserted.Load()
		switch {
		case ctx.Err() != nil:
			return p, ctx.Err()
		case insErr != nil:
			return p, fmt.Errorf("insert: %w", insErr)
		case sampleErr != nil:
			return p, sampleErr
		case stopErr != nil:
			return p, fmt.Errorf("stop River's client: %w", stopErr)
		}
		if hold {
			// xids assigned since the holder's write: it pinned the horizon
			// through the load.
			err := pool.QueryRow(ctx, "SELECT coalesce(age(backend_xid), -1)::bigint FROM pg_stat_activity WHERE pid = $1",
				int64(holder)).Scan(&p.holderAge)
			if err != nil {
				return p, fmt.Errorf("xmin holder's age (did its session end?): %w", err)
			}
		}
		logf("%s: %.0f jobs/s, claim p99 %.2f ms, %d dead tuples", name,
			p.jobsPerSecond(), ms(p.series.whole.claim.quantile(0.99)), p.lastDead().total)
		return p, nil
	}
	clean, err := phase("clean", c.duration, false)
	if err != nil {
		return r, err
	}
	held, err := phase("pressure", c.hold, true)
	if err != nil {
		return r, err
	}
	r.Mode = "river-pressure"
	pressureReport(&r, clean, held, c.rate > 0)
	if c.rate > 0 {
		r.add("rate", "arrival rate, both phases", c.rate, "jobs/s")
		for _, p := range []struct {
			name string
			ph   pressurePhase
		}{{"clean", clean}, {"pressure", held}} {
			r.add("arrived_"+p.name, p.name+": jobs that arrived in the window", p.ph.inserted, "")
			r.add("completed_percent_"+p.name, p.name+": jobs started in the window, of those that arrived",
				100*ratio(float64(p.ph.series.whole.jobs.Load()), float64(p.ph.inserted)), "%")
		}
	}
	r.add("holder_xid_age", "xids assigned after the holder's write, at the end", held.holderAge, "")
	r.add("workers", "workers (MaxWorkers)", c.workers, "")
	r.add("backlog", "backlog kept by the inserter", c.backlog, "jobs")
	r.add("jobs_inserted", "jobs inserted (both phases)", clean.inserted+held.inserted, "")
	var sync string
	_ = pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sync)
	r.add("pool", "pool connections", c.pool, "")
	r.add("synchronous_commit", "synchronous_commit", sync, "")
	r.add("river_fetch_cooldown_ms", "River's FetchCooldown", ms(c.fetchCooldown), "ms")
	r.add("river_fetch_poll_interval_ms", "River's FetchPollInterval", ms(c.fetchPoll), "ms")
	return r, nil
}

// holdXmin opens a session that writes a row in a transaction it keeps
// open (its xid holds the xmin horizon), exactly as the console's pressure
// holder does; release rolls it back.
func holdXmin(ctx context.Context, url string) (release func(), pid uint32, err error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, 0, fmt.Errorf("connect the xmin holder: %w", err)
	}
	release = func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(cctx, "ROLLBACK")
		conn.Close(cctx)
	}
	for _, s := range []string{
		"SET idle_in_transaction_session_timeout = 0",
		"BEGIN",
		"CREATE TEMPORARY TABLE xmin_holder (n int) ON COMMIT DROP; INSERT INTO xmin_holder VALUES (1)",
	} {
		if _, err := conn.Exec(ctx, s); err != nil {
			release()
			return nil, 0, fmt.Errorf("xmin holder: %w", err)
		}
	}
	var holds bool
	if err := conn.QueryRow(ctx, "SELECT backend_xid IS NOT NULL FROM pg_stat_activity WHERE pid = pg_backend_pid()").Scan(&holds); err != nil {
		release()
		return nil, 0, fmt.Errorf("xmin holder: %w", err)
	}
	if !holds {
		release()
		return nil, 0, errors.New("the xmin holder's transaction has no xid")
	}
	return release, conn.PgConn().PID(), nil
}

// sampleEvery is how often a phase reads the dead tuples.
const sampleEvery = 10 * time.Second

type deadSample struct {
	at         time.Duration
	total, job int64
}

func sampleDead(ctx context.Context, pool *pgxpool.Pool, s *loadSeries, begun time.Time) ([]deadSample, error) {
	var out []deadSample
	read := func(ctx context.Context) error {
		var d deadSample
		err := pool.QueryRow(ctx, `SELECT coalesce(sum(n_dead_tup), 0)::bigint,
			coalesce(sum(n_dead_tup) FILTER (WHERE relid = 'river_job'::regclass), 0)::bigint
			FROM pg_stat_user_tables`).Scan(&d.total, &d.job)
		if err != nil {
			return fmt.Errorf("read the dead tuples: %w", err)
		}
		now := time.Now()
		d.at = now.Sub(begun)
		out = append(out, d)
		s.deadAt(now, d.total)
		return nil
	}
	tick := time.NewTicker(sampleEvery)
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

// --- the series and the report, as the console's bench keeps them ---------

type loadSeries struct {
	start   atomic.Int64
	window  time.Duration
	handled atomic.Int64 // every handler start, in the window or not (the inserter's count)
	minutes []minuteSeries
	whole   minuteSeries
}

type minuteSeries struct {
	jobs         atomic.Int64
	claim, start latencyHistogram
	dead         atomic.Int64
}

func newLoadSeries(window time.Duration) *loadSeries {
	s := &loadSeries{window: window, minutes: make([]minuteSeries, (window+time.Minute-1)/time.Minute)}
	for i := range s.minutes {
		s.minutes[i].dead.Store(-1)
	}
	return s
}

func (s *loadSeries) begin(t time.Time) { s.start.Store(t.UnixNano()) }

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

func (s *loadSeries) deadAt(t time.Time, n int64) {
	if start := s.start.Load(); start != 0 && t.UnixNano() >= start {
		i := min(time.Duration(t.UnixNano()-start)/time.Minute, time.Duration(len(s.minutes)-1))
		s.minutes[i].dead.Store(n)
	}
}

func (s *loadSeries) job(now, stamp time.Time, inWindow bool) {
	s.handled.Add(1)
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

func (s *loadSeries) claim(end time.Time, d time.Duration) {
	if m := s.minute(end); m != nil {
		m.claim.record(d)
		s.whole.claim.record(d)
	}
}

type pressurePhase struct {
	series    *loadSeries
	dead      []deadSample
	inserted  int64
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

// pressureReport adds both phases' figures, their ratios and every minute.
// kept_percent is the pressure phase's throughput against the clean one's,
// or at a fixed arrival rate (arrivals) the jobs started under pressure
// against those that arrived.
func pressureReport(r *report, clean, held pressurePhase, arrivals bool) {
	q := func(h *latencyHistogram, p float64) float64 { return ms(h.quantile(p)) }
	phases := []struct {
		name string
		ph   pressurePhase
	}{{"clean", clean}, {"pressure", held}}
	for _, p := range phases {
		w := &p.ph.series.whole
		r.add("seconds_"+p.name, p.name+": window", p.ph.series.window.Seconds(), "s")
		r.add("jobs_"+p.name, p.name+": jobs started in the window", w.jobs.Load(), "")
		r.add("jobs_per_second_"+p.name, p.name+": throughput", p.ph.jobsPerSecond(), "jobs/s")
		r.add("claim_p50_ms_"+p.name, p.name+": claim statement p50", q(&w.claim, 0.5), "ms")
		r.add("claim_p99_ms_"+p.name, p.name+": claim statement p99", q(&w.claim, 0.99), "ms")
		r.add("claims_"+p.name, p.name+": claim statements timed", w.claim.n.Load(), "")
		r.add("start_p50_ms_"+p.name, p.name+": enqueue-to-start p50", q(&w.start, 0.5), "ms")
		r.add("start_p99_ms_"+p.name, p.name+": enqueue-to-start p99", q(&w.start, 0.99), "ms")
		last := p.ph.lastDead()
		r.add("dead_tuples_"+p.name, p.name+": dead tuples at the end, all tables", last.total, "")
		r.add("dead_tuples_jobs_"+p.name, p.name+": dead tuples at the end, river_job", last.job, "")
	}
	if arrivals {
		r.add("kept_percent", "jobs started under pressure, of those that arrived",
			100*ratio(float64(held.series.whole.jobs.Load()), float64(held.inserted)), "%")
	} else {
		r.add("kept_percent", "throughput kept under pressure", 100*ratio(held.jobsPerSecond(), clean.jobsPerSecond()), "%")
	}
	r.add("claim_p99_ratio", "claim p99, pressure / clean",
		ratio(q(&held.series.whole.claim, 0.99), q(&clean.series.whole.claim, 0.99)), "")
	r.add("start_p99_ratio", "enqueue-to-start p99, pressure / clean",
		ratio(q(&held.series.whole.start, 0.99), q(&clean.series.whole.start, 0.99)), "")
	for _, p := range phases {
		for i := range p.ph.series.minutes {
			r.add(fmt.Sprintf("%s_minute_%d", p.name, i+1), fmt.Sprintf("%s: minute %d", p.name, i+1),
				p.ph.series.minuteFigures(i), "")
		}
		parts := make([]string, len(p.ph.dead))
		for i, d := range p.ph.dead {
			parts[i] = fmt.Sprintf("%.0fs %d", d.at.Seconds(), d.total)
		}
		r.add("dead_tuples_series_"+p.name, p.name+": dead tuples every ~10 s", strings.Join(parts, ", "), "")
	}
}

type minuteFigures struct {
	Jobs          int64   `json:"jobs"`
	JobsPerSecond float64 `json:"jobs_per_second"`
	ClaimP50MS    float64 `json:"claim_p50_ms"`
	ClaimP99MS    float64 `json:"claim_p99_ms"`
	StartP50MS    float64 `json:"start_p50_ms"`
	StartP99MS    float64 `json:"start_p99_ms"`
	DeadTuples    int64   `json:"dead_tuples"`
}

func (m minuteFigures) String() string {
	return fmt.Sprintf("%s jobs/s, claim p50 %s p99 %s ms, start p50 %s p99 %s ms, dead tuples %d",
		formatValue(m.JobsPerSecond), formatValue(m.ClaimP50MS), formatValue(m.ClaimP99MS),
		formatValue(m.StartP50MS), formatValue(m.StartP99MS), m.DeadTuples)
}

func (s *loadSeries) minuteFigures(i int) minuteFigures {
	m := &s.minutes[i]
	span := min(time.Minute, s.window-time.Duration(i)*time.Minute)
	return minuteFigures{
		Jobs:          m.jobs.Load(),
		JobsPerSecond: float64(m.jobs.Load()) / span.Seconds(),
		ClaimP50MS:    ms(m.claim.quantile(0.5)),
		ClaimP99MS:    ms(m.claim.quantile(0.99)),
		StartP50MS:    ms(m.start.quantile(0.5)),
		StartP99MS:    ms(m.start.quantile(0.99)),
		DeadTuples:    m.dead.Load(),
	}
}

type metric struct {
	key, label string
	value      any
	unit       string
}

type report struct {
	Mode    string
	metrics []metric
}

func (r *report) add(key, label string, value any, unit string) {
	r.metrics = append(r.metrics, metric{key, label, value, unit})
}

// MarshalJSON is one flat object, as `console bench --json` prints.
func (r report) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	mode, _ := json.Marshal(r.Mode)
	b.WriteString(`{"mode":` + string(mode))
	for _, m := range r.metrics {
		v := m.value
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v = nil
		}
		k, _ := json.Marshal(m.key)
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", m.key, err)
		}
		b.WriteString("," + string(k) + ":" + string(vb))
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func (r report) writeTable(w io.Writer) error {
	width := len("mode")
	for _, m := range r.metrics {
		width = max(width, len(m.label))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %s\n", width, "mode", r.Mode)
	for _, m := range r.metrics {
		fmt.Fprintf(&b, "%-*s  %s", width, m.label, formatValue(m.value))
		if m.unit != "" {
			b.WriteString(" " + m.unit)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func formatValue(v any) string {
	x, ok := v.(float64)
	switch {
	case !ok:
		return fmt.Sprint(v)
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "n/a"
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 1:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// latencyBuckets: durations below 64 ns exactly, then 64 buckets per power
// of two (each within 1/64 of its value).
const latencyBuckets = 64 + 57*64

type latencyHistogram struct {
	n      atomic.Int64
	counts [latencyBuckets]atomic.Int64
}

func (h *latencyHistogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	i := int(v)
	if v >= 64 {
		e := bits.Len64(v) - 1
		i = 64 + (e-6)*64 + int((v>>(e-6))&63)
	}
	h.counts[i].Add(1)
	h.n.Add(1)
}

func (h *latencyHistogram) quantile(q float64) time.Duration {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := max(int64(q*float64(n)+0.999999999), 1)
	var seen int64
	for i := range h.counts {
		if seen += h.counts[i].Load(); seen >= rank {
			if i < 64 {
				return time.Duration(i)
			}
			e, sub := (i-64)/64+6, (i-64)%64
			return time.Duration(uint64(64+sub) << (e - 6))
		}
	}
	return 0
}
