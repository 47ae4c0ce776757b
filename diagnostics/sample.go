package diagnostics

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/queues/river"
)

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
	Workers     []Worker
	// Blocked is the number of backends waiting in the blocking tree, and
	// OldestXactSeconds the age of the oldest client transaction.
	Blocked           *int
	OldestXactSeconds *float64
	// PreparedXacts counts prepared transactions; Tables is the vacuum
	// state of the queue tables and the tables with the most dead rows.
	PreparedXacts *int
	Tables        []TableStat
	// RiverQueues are River's queues (river.QueueList) when the
	// database's jobs are River's (Config.River); nil otherwise or when
	// the read failed.
	RiverQueues []river.QueueStat
}

// IOTotals is pg_stat_io summed: cumulative bytes read, written and
// extended, and the oldest stats_reset.
type IOTotals struct {
	ReadBytes   int64
	WriteBytes  int64
	ExtendBytes int64
	StatsReset  *time.Time
}

// TakeSample reads one Sample: the catalog's sampled checks share one
// read-only transaction, each bounded by the Diagnostics timeouts and all
// together by Config.Budget. A check that fails leaves its field empty; a
// server whose version is unknown or unsupported is not sampled (the
// queries' variants would be a guess). The gauges a shared round read at
// most Config.PanelMaxAge ago (the waiting backends, the oldest
// transaction, the prepared transactions: the lock storm's costliest
// reads) are taken from it while someone watches, not read again.
func (d *Diagnostics) TakeSample(ctx context.Context) Sample {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Budget)
	defer cancel()
	smp := Sample{At: time.Now().UTC()}
	info, err := d.ServerInfo(ctx)
	v := info.VersionNum
	if err == nil {
		var sess *session
		sess, err = d.begin(ctx, d.pool, pgx.RepeatableRead)
		if err == nil {
			sess.bare = true
			d.sampleChecks(ctx, sess, &smp, v)
		}
	}
	return smp
}

// UseWALRate makes rounds take the WAL rate from rate while it reports
// one (a sampler's rate between its two newest samples), and the previous
// round's position otherwise.
func (d *Diagnostics) UseWALRate(rate func() (float64, bool)) {
	d.mu.Lock()
	d.walRate = rate
	d.mu.Unlock()
}

// sampleChecks runs every sampled check of the catalog in sess, a bare
// session (one round trip a statement: a sample's statements are many and
// cheap), then ends it. A check that fails aborts the transaction: the
// checks after it run in a new one.
func (d *Diagnostics) sampleChecks(ctx context.Context, sess *session, smp *Sample, v int) {
	defer func() {
		if sess != nil {
			sess.end()
		}
	}()
	st := &sampleState{sample: smp, version: v, thresholds: d.Thresholds(), slow: func(ctx context.Context) Round {
		r, _ := d.slow.Stale(ctx, 0)
		return r
	}}
	// renew begins a new transaction when a statement failed and aborted
	// sess's, and reports whether sess can run statements.
	renew := func() bool {
		if !sess.failed {
			return true
		}
		sess.end()
		var err error
		if sess, err = d.begin(ctx, d.pool, pgx.RepeatableRead); err != nil {
			sess = nil
			return false
		}
		sess.bare = true
		return true
	}
	fresh, ok := d.rounds.Last()
	ok = ok && d.now().Sub(fresh.At) <= d.cfg.PanelMaxAge
	for _, c := range sampleOrdered() {
		if ctx.Err() != nil {
			break
		}
		if ok && c.sampleRound != nil && !fresh.Failed(c.Name) {
			c.sampleRound(fresh, smp) // the round someone is watching read it moments ago
			continue
		}
		if _, err := fileFor(c.Name, v); err != nil {
			continue // the server is too old for it
		}
		if c.slow {
			_ = c.sample(ctx, nil, st) // a failed read leaves the rows out, as a failed query does
			continue
		}
		if c.sampleKnown != nil && c.sampleKnown(st) {
			continue // the sample's earlier reads settle it
		}
		if !renew() {
			return // what is left stays empty, as a failed query leaves it
		}
		sess.run(ctx, c.Name, nil, func(ctx context.Context, db DBTX) error { return c.sample(ctx, db, st) })
	}
	if d.river.Load() && ctx.Err() == nil && renew() {
		sampleRiver(ctx, sess, smp, fresh, ok)
	}
}

// sampleOrdered is sampleOrder, worked out once: the catalog does not
// change after init, and a sample runs every few seconds.
var sampleOrdered = sync.OnceValue(sampleOrder)

// sampleOrder is the sampled checks in the order a sample reads them:
// catalog order, except that a check with sampleAfter comes right after
// the check it names.
func sampleOrder() []*Check {
	var out []*Check
	placed := map[string]bool{}
	after := map[string][]*Check{} // checks waiting for the one named
	var place func(c *Check)
	place = func(c *Check) {
		out = append(out, c)
		placed[c.Name] = true
		for _, w := range after[c.Name] {
			place(w)
		}
		delete(after, c.Name)
	}
	for i := range checks {
		switch c := &checks[i]; {
		case c.sample == nil:
		case c.sampleAfter != "" && !placed[c.sampleAfter]:
			after[c.sampleAfter] = append(after[c.sampleAfter], c)
		default:
			place(c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) { // a sampleAfter naming no sampled check
		out = append(out, after[name]...)
	}
	return out
}
