package diagnostics

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/lifecycle"
)

// SamplerConfig configures a Sampler. Zero values are defaults.
type SamplerConfig struct {
	// Interval between samples; default 10s.
	Interval time.Duration
	// Size is how many samples the ring keeps; default 360 (an hour at
	// 10s).
	Size int
	// OnSampleFunc, when set, is called with each sample after it joins the
	// ring, in the sampling goroutine (the flight recorder: Recorder.Record).
	OnSampleFunc func(ctx context.Context, smp Sample) error
}

// Sample is one reading of the cumulative statistics and gauges the console
// turns into rates and sparklines. A nil or empty field means its query
// failed in that sample.
type Sample struct {
	At           time.Time
	WAL          *WALPoint
	WALStats     *WALStat
	Checkpointer *CheckpointerStat
	Archiver     *ArchiverStat
	// IO is pg_stat_io summed over every row (16+): read and written bytes.
	IO          *IOTotals
	Replication []Standby
	Slots       []Slot
	Queues      []QueueStat
	Outbox      *OutboxStat
	// Blocked is the number of backends waiting in the blocking tree, and
	// OldestXactSeconds the age of the oldest client transaction.
	Blocked           *int
	OldestXactSeconds *float64
	// PreparedXacts counts prepared transactions; Tables is the vacuum
	// state of the queue tables and the tables with the most dead rows.
	PreparedXacts *int
	Tables        []TableStat
}

// IOTotals is pg_stat_io summed: cumulative bytes read, written and
// extended, and the oldest stats_reset.
type IOTotals struct {
	ReadBytes   int64
	WriteBytes  int64
	ExtendBytes int64
	StatsReset  *time.Time
}

// Point is one value of a series at one time.
type Point struct {
	At    time.Time `json:"at"`
	Value float64   `json:"value"`
}

// Sampler keeps a ring of recent samples so pages show rates and sparklines,
// not totals since boot. It is a service: Start it once, Stop it when done;
// one goroutine samples at Interval.
type Sampler struct {
	d   *Diagnostics
	cfg SamplerConfig

	life lifecycle.Runner

	mu   sync.Mutex
	ring []Sample
	next int
	full bool
}

// NewSampler creates a Sampler reading through d. d's Findings use its WAL
// rate while it runs.
func (d *Diagnostics) NewSampler(cfg SamplerConfig) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Size <= 1 {
		cfg.Size = 360
	}
	s := &Sampler{d: d, cfg: cfg, ring: make([]Sample, cfg.Size)}
	d.mu.Lock()
	d.sampler = s
	d.mu.Unlock()
	return s
}

// Start takes a first sample and starts sampling every Interval until ctx
// ends or Stop is called. A failed first sample is not an error (the
// database may be down; samples record what failed); calling Start twice
// is.
func (s *Sampler) Start(ctx context.Context) error {
	first := make(chan struct{})
	err := s.life.Start(ctx, func(ctx context.Context) {
		s.SampleNow(ctx)
		close(first)
		t := time.NewTicker(s.cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.SampleNow(ctx)
			}
		}
	})
	if err != nil { // lifecycle.ErrStarted: a sampler runs once
		return errors.New("diagnostics: sampler already started")
	}
	<-first
	return nil
}

// Stop ends sampling and waits for the goroutine. It is safe to call more
// than once, and before Start.
func (s *Sampler) Stop() { s.life.Stop() }

// SampleNow takes one sample and adds it to the ring; queries share one
// read-only transaction, each bounded by the Diagnostics timeouts and all
// together by Config.Budget.
func (s *Sampler) SampleNow(ctx context.Context) Sample {
	d := s.d
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Budget)
	defer cancel()
	smp := Sample{At: time.Now().UTC()}
	// A server whose version is unknown or unsupported is not sampled: the
	// queries' variants would be a guess.
	info, err := d.ServerInfo(ctx)
	v := info.VersionNum
	if err == nil {
		var sess *session
		sess, err = d.begin(ctx, d.pool, pgx.RepeatableRead)
		if err == nil {
			d.sampleChecks(ctx, sess, &smp, v)
		}
	}
	s.mu.Lock()
	s.ring[s.next] = smp
	s.next = (s.next + 1) % len(s.ring)
	if s.next == 0 {
		s.full = true
	}
	s.mu.Unlock()
	if s.cfg.OnSampleFunc != nil && ctx.Err() == nil {
		_ = s.cfg.OnSampleFunc(ctx, smp) // the recorder keeps its own status
	}
	return smp
}

// sampleChecks runs every sampled check of the catalog in sess, then ends
// it.
func (d *Diagnostics) sampleChecks(ctx context.Context, sess *session, smp *Sample, v int) {
	defer sess.end()
	st := &sampleState{sample: smp, version: v, thresholds: d.Thresholds(), slow: func(ctx context.Context) Round {
		r, _ := d.slow.Stale(ctx, 0)
		return r
	}}
	for _, c := range checks {
		if c.sample == nil {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		if _, err := fileFor(c.Name, v); err != nil {
			continue // the server is too old for it
		}
		if c.slow {
			_ = c.sample(ctx, nil, st) // a failed read leaves the rows out, as a failed query does
			continue
		}
		sess.run(ctx, c.Name, nil, func(ctx context.Context, db DBTX) error { return c.sample(ctx, db, st) })
	}
}

// Samples returns the ring's samples, oldest first.
func (s *Sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sample
	if s.full {
		out = append(out, s.ring[s.next:]...)
	}
	out = append(out, s.ring[:s.next]...)
	return out
}

// Latest returns the newest sample, if any.
func (s *Sampler) Latest() (Sample, bool) {
	all := s.Samples()
	if len(all) == 0 {
		return Sample{}, false
	}
	return all[len(all)-1], true
}

// freshWALRate is the WAL rate between the two newest samples when the
// newest is at most two intervals old.
func (s *Sampler) freshWALRate() (float64, bool) {
	pts := s.Series("wal.bytes_per_second")
	if len(pts) == 0 {
		return 0, false
	}
	last := pts[len(pts)-1]
	if time.Since(last.At) > 2*s.cfg.Interval+time.Second {
		return 0, false
	}
	return last.Value, true
}

// SeriesNames lists the series the samples in the ring can give, sorted:
// fixed names (wal.bytes_per_second, ...) and per-object ones
// (queue.<name>.ready, slot.<name>.retained_bytes,
// replication.<application_name>.replay_lag_bytes).
func (s *Sampler) SeriesNames() []string {
	names := map[string]bool{}
	for _, n := range fixedSeries {
		names[n] = true
	}
	for _, smp := range s.Samples() {
		for _, q := range smp.Queues {
			for _, f := range []string{"ready", "running", "dead", "expired_leases", "oldest_ready_seconds"} {
				names["queue."+q.Queue+"."+f] = true
			}
		}
		for _, sl := range smp.Slots {
			names["slot."+sl.SlotName+".retained_bytes"] = true
		}
		for _, r := range smp.Replication {
			names["replication."+r.ApplicationName+".replay_lag_bytes"] = true
			names["replication."+r.ApplicationName+".replay_lag_seconds"] = true
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var fixedSeries = []string{
	"wal.bytes_per_second", "wal.records_per_second", "wal.fpi_per_second",
	"checkpoints.per_minute", "checkpoints.requested_per_minute", "bgwriter.buffers_alloc_per_second",
	"archiver.archived_per_minute", "archiver.failed_per_minute",
	"io.read_bytes_per_second", "io.write_bytes_per_second",
	"outbox.pending", "outbox.oldest_pending_seconds", "outbox.dead",
	"blocked_backends", "oldest_xact_seconds",
}

// Series returns the points of one series over the ring, oldest first.
// Rates come from deltas between consecutive samples; a delta across a
// stats reset (stats_reset changed or a counter went down) or a missing
// value gives no point, never a negative rate. Gauges give one point per
// sample that has the value. Unknown names give nil.
func (s *Sampler) Series(name string) []Point {
	samples := s.Samples()
	if g := gaugeFunc(name); g != nil {
		var out []Point
		for _, smp := range samples {
			if v, ok := g(smp); ok {
				out = append(out, Point{At: smp.At, Value: v})
			}
		}
		return out
	}
	c, ok := counters[name]
	if !ok {
		return nil
	}
	var out []Point
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		av, aReset, aok := c.read(a)
		bv, bReset, bok := c.read(b)
		dt := b.At.Sub(a.At).Seconds()
		if !aok || !bok || dt <= 0 || bv < av || !sameReset(aReset, bReset) {
			continue
		}
		out = append(out, Point{At: b.At, Value: (bv - av) / dt * c.per})
	}
	return out
}

func sameReset(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// counter is a rate series: the cumulative value it is computed from (and
// that value's stats_reset), and the rate's multiplier (1 per second, 60
// per minute).
type counter struct {
	read func(Sample) (value float64, reset *time.Time, ok bool)
	per  float64
}

// cumulative reads one counter of a section of a sample; a section whose
// query failed (nil) gives no value.
func cumulative[S any](section func(Sample) *S, value func(*S) int64, reset func(*S) *time.Time) func(Sample) (float64, *time.Time, bool) {
	return func(s Sample) (float64, *time.Time, bool) {
		x := section(s)
		if x == nil {
			return 0, nil, false
		}
		return float64(value(x)), reset(x), true
	}
}

func walPointOf(s Sample) *WALPoint                    { return s.WAL }
func walStatsOf(s Sample) *WALStat                     { return s.WALStats }
func checkpointerOf(s Sample) *CheckpointerStat        { return s.Checkpointer }
func archiverOf(s Sample) *ArchiverStat                { return s.Archiver }
func ioTotalsOf(s Sample) *IOTotals                    { return s.IO }
func noReset(*WALPoint) *time.Time                     { return nil }
func walStatsReset(w *WALStat) *time.Time              { return w.StatsReset }
func checkpointerReset(c *CheckpointerStat) *time.Time { return c.StatsReset }
func archiverReset(a *ArchiverStat) *time.Time         { return a.StatsReset }
func ioReset(t *IOTotals) *time.Time                   { return t.StatsReset }

// counters are the rate series by name.
var counters = map[string]counter{
	"wal.bytes_per_second":             {cumulative(walPointOf, func(w *WALPoint) int64 { return w.LSNBytes }, noReset), 1},
	"wal.records_per_second":           {cumulative(walStatsOf, func(w *WALStat) int64 { return w.Records }, walStatsReset), 1},
	"wal.fpi_per_second":               {cumulative(walStatsOf, func(w *WALStat) int64 { return w.FPI }, walStatsReset), 1},
	"checkpoints.per_minute":           {cumulative(checkpointerOf, func(c *CheckpointerStat) int64 { return c.CheckpointsTimed + c.CheckpointsRequested }, checkpointerReset), 60},
	"checkpoints.requested_per_minute": {cumulative(checkpointerOf, func(c *CheckpointerStat) int64 { return c.CheckpointsRequested }, checkpointerReset), 60},
	"bgwriter.buffers_alloc_per_second": {cumulative(checkpointerOf, func(c *CheckpointerStat) int64 { return c.BuffersAlloc },
		func(c *CheckpointerStat) *time.Time { return c.BgwriterStatsReset }), 1},
	"archiver.archived_per_minute": {cumulative(archiverOf, func(a *ArchiverStat) int64 { return a.ArchivedCount }, archiverReset), 60},
	"archiver.failed_per_minute":   {cumulative(archiverOf, func(a *ArchiverStat) int64 { return a.FailedCount }, archiverReset), 60},
	"io.read_bytes_per_second":     {cumulative(ioTotalsOf, func(t *IOTotals) int64 { return t.ReadBytes }, ioReset), 1},
	"io.write_bytes_per_second":    {cumulative(ioTotalsOf, func(t *IOTotals) int64 { return t.WriteBytes + t.ExtendBytes }, ioReset), 1},
}

// gaugeFunc returns the value a gauge series reads from one sample.
func gaugeFunc(name string) func(Sample) (float64, bool) {
	switch name {
	case "outbox.pending", "outbox.oldest_pending_seconds", "outbox.dead":
		return func(s Sample) (float64, bool) {
			if s.Outbox == nil {
				return 0, false
			}
			switch name {
			case "outbox.pending":
				return float64(s.Outbox.Pending), true
			case "outbox.dead":
				return float64(s.Outbox.Dead), true
			}
			return s.Outbox.OldestPendingSeconds, true
		}
	case "blocked_backends":
		return func(s Sample) (float64, bool) {
			if s.Blocked == nil {
				return 0, false
			}
			return float64(*s.Blocked), true
		}
	case "oldest_xact_seconds":
		return func(s Sample) (float64, bool) {
			if s.OldestXactSeconds == nil {
				return 0, false
			}
			return *s.OldestXactSeconds, true
		}
	}
	if rest, ok := strings.CutPrefix(name, "queue."); ok {
		i := strings.LastIndex(rest, ".")
		if i < 0 {
			return nil
		}
		queue, field := rest[:i], rest[i+1:]
		return func(s Sample) (float64, bool) {
			if s.Queues == nil {
				return 0, false
			}
			for _, q := range s.Queues {
				if q.Queue != queue {
					continue
				}
				switch field {
				case "ready":
					return float64(q.Ready), true
				case "running":
					return float64(q.Running), true
				case "dead":
					return float64(q.Dead), true
				case "expired_leases":
					return float64(q.ExpiredLeases), true
				case "oldest_ready_seconds":
					return q.OldestReadySeconds, true
				}
				return 0, false
			}
			return 0, true
		}
	}
	if rest, ok := strings.CutPrefix(name, "slot."); ok {
		slot, ok := strings.CutSuffix(rest, ".retained_bytes")
		if !ok {
			return nil
		}
		return func(s Sample) (float64, bool) {
			for _, sl := range s.Slots {
				if sl.SlotName == slot {
					return float64(sl.RetainedBytes), true
				}
			}
			return 0, false
		}
	}
	if rest, ok := strings.CutPrefix(name, "replication."); ok {
		i := strings.LastIndex(rest, ".replay_lag_")
		if i < 0 {
			return nil
		}
		app, field := rest[:i], rest[i+len(".replay_lag_"):]
		return func(s Sample) (float64, bool) {
			for _, r := range s.Replication {
				if r.ApplicationName != app {
					continue
				}
				if field == "bytes" {
					return float64(r.ReplayLagBytes), true
				}
				if r.ReplayLagSeconds != nil {
					return *r.ReplayLagSeconds, true
				}
				return 0, false
			}
			return 0, false
		}
	}
	return nil
}
