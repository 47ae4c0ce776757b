package diagnostics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Round is the evidence of one Findings round: what each check returned.
// Nil or empty fields mean the check returned nothing or could not run
// (then Unavailable says why).
type Round struct {
	At       time.Time
	Blocking []BlockingNode
	// BlockedJobs are the running jobs whose sessions wait on a lock, with
	// their queue and kind.
	BlockedJobs []BlockedJob
	Activity    []Backend
	IdleTx      []IdleTx
	WALRate     *float64
	Replication []Standby
	Standbys    []StandbyState
	Slots       []Slot
	Archiver    *ArchiverStat
	Prepared    []PreparedXact
	Xmin        []XminHolder
	Tables      []TableStat
	Invalid     []InvalidIndex
	Notify      *NotifyUsage
	Connections []ConnectionGroup
	Sequences   []SequenceUse
	Queues      []QueueStat
	DeadLetters []DeadLetterGroup
	Outbox      *OutboxStat
	Workers     []Worker
	Wraparound  []WraparoundAge
	Idempotency []StuckIdempotencyKey
	LongJobs    []LongRunningJob
	WALDir      *WALDirStat
	// Checkpointer is the counters this round read; Checkpoints the window
	// they close with an earlier round's (nil until there is one).
	Checkpointer *CheckpointerStat
	Checkpoints  *CheckpointWindow
	// StandbyConflicts is, for each standby read twice or more, what replay
	// canceled there over the window.
	StandbyConflicts []ConflictWindow
	// DeadlockStats is each database's deadlock counter this round read;
	// Deadlocks the window it closes with an earlier round's (nil until
	// there is one).
	DeadlockStats []DeadlockStat
	Deadlocks     *DeadlockWindow
	Tenants       []TenantBacklog
	// RepeatBlockers are the root applications that held up the engine's
	// job claims in the lock episodes of the last hour (a slow check).
	RepeatBlockers []RepeatBlocker
	// River is what the round read of River's tables; nil unless
	// Config.River is set.
	River       *RiverEvidence
	Unavailable []Unavailable
	// SlowAt is when the catalog-wide checks' rows (SlowChecks) were
	// read: At when this round read them, earlier when a shared round
	// reused the slow clock's read.
	SlowAt time.Time
	// Timings is how long each check took, by check name.
	Timings map[string]time.Duration
	// Took is the wall time of the round.
	Took time.Duration
}

// Unavailable is a check that failed or timed out in a round.
type Unavailable struct {
	Check    string
	Status   string
	TimedOut bool
	LockedBy []int32
	Err      error
}

// LatestRound returns a findings round no older than maxAge (zero means
// Config.RoundMaxAge), shared by every caller: the overview of each open
// tab, GET /api/v1/findings and the Prometheus Collector take the same
// round, at most one round runs at a time, and callers that arrive while it
// runs wait for it. Round.At says when the round started. A round that could
// not run at all (the database unreachable) is served for at most a second.
//
// ctx bounds only the wait: the error is ctx's when it ended before a round
// was available, and the round then goes on for the next caller, within
// Config.Budget. A round that failed is not an error: its Unavailable says
// what failed.
func (d *Diagnostics) LatestRound(ctx context.Context, maxAge time.Duration) (Round, error) {
	r, err := d.rounds.Get(ctx, maxAge)
	if errors.Is(err, errRoundFailed) {
		return r, nil
	}
	return r, err
}

// errRoundFailed marks, in the round cache, a round that could not start, so
// it expires as a failed read does.
var errRoundFailed = errors.New("diagnostics round failed")

// sharedRound runs a round for LatestRound's cache: the fast checks, and
// the catalog-wide ones from the slow clock, read beside it when due.
func (d *Diagnostics) sharedRound(ctx context.Context) (Round, error) {
	d.roundsRun.Add(1)
	slow := make(chan Round, 1)
	go func() { r, _ := d.slow.Stale(ctx, 0); slow <- r }()
	r := d.round(ctx, false)
	withSlow(&r, <-slow)
	for _, u := range r.Unavailable {
		if name, _, _ := strings.Cut(u.Check, " "); name == CheckServerInfo || name == "connect" {
			return r, fmt.Errorf("%w: %s: %s", errRoundFailed, name, u.Status)
		}
	}
	return r, nil
}

// Round runs every check of a Findings round in one REPEATABLE READ, READ
// ONLY transaction (one savepoint per check, in catalog order), within
// Config.Budget, then reads each standby. A check that fails is listed in
// Unavailable. It reads the catalog-wide checks too (SlowChecks), so
// Round.SlowAt is Round.At; the shared rounds (LatestRound) take those from
// the slow clock instead.
func (d *Diagnostics) Round(ctx context.Context) Round {
	return d.round(ctx, true)
}

// round is Round; withSlow false leaves out the catalog-wide checks.
func (d *Diagnostics) round(ctx context.Context, withSlow bool) Round {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Budget)
	defer cancel()
	r := Round{At: d.now().UTC(), Timings: map[string]time.Duration{}}
	if withSlow {
		r.SlowAt = r.At
	}
	t := d.Thresholds()
	info, err := d.ServerInfo(ctx)
	if err != nil {
		r.Unavailable = append(r.Unavailable, unavailable(CheckServerInfo, probeOf(err)))
		r.Took = time.Since(start)
		return r
	}
	s, err := d.begin(ctx, d.pool, pgx.RepeatableRead)
	if err != nil {
		r.Unavailable = append(r.Unavailable, unavailable("connect", probeOf(err)))
		r.Took = time.Since(start)
		return r
	}
	// The transaction is ended before the round waits for the second WAL
	// position: it must not hold its locks on application tables (nor its
	// snapshot) while nothing runs.
	ended := false
	endTx := func() {
		if !ended {
			ended = true
			s.end()
		}
	}
	defer endTx()

	st := newRoundState(&r, info.VersionNum, t)
	st.readChecks(ctx, s, func(c Check) bool { return withSlow || !c.slow })
	if d.river.Load() {
		r.River = readRiver(ctx, s, &r, t)
	}

	endTx()

	// The WAL rate: the sampler's, or the previous round's position, or a
	// second position WALSampleWindow after the first, read outside the
	// round's transaction.
	primary := st.walFrom
	if st.walFrom != nil {
		walFrom := *st.walFrom
		rate, ok := d.rateSince(walFrom)
		if !ok && ctx.Err() == nil {
			wait := time.Until(walFrom.SampledAt.Add(d.cfg.WALSampleWindow))
			if dl, has := ctx.Deadline(); has && time.Until(dl) < wait+d.cfg.StatementTimeout/4 {
				wait = time.Until(dl) - d.cfg.StatementTimeout/4
			}
			if wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-timer.C:
				}
				timer.Stop()
			}
			var walTo WALPoint
			p := probe{Err: ctx.Err()}
			if ws, err := d.begin(ctx, d.pool, pgx.ReadCommitted); err != nil {
				p = probeOf(err)
			} else if p.Err == nil {
				p = ws.run(ctx, CheckWALPosition, nil, func(ctx context.Context, db DBTX) (err error) { walTo, err = WALPosition(ctx, db); return })
				ws.end()
			}
			if p.Err == nil {
				rate, ok = WALRate(walFrom, walTo), walTo.SampledAt.After(walFrom.SampledAt)
				d.rememberWAL(walTo, rate, ok)
				primary = &walTo
			}
		}
		if ok {
			r.WALRate = &rate
		}
	}
	if !r.Failed(CheckXminHorizon) {
		d.ageXmin(r.At, r.Xmin)
	}
	if !r.Failed(CheckReplicationSlots) {
		d.slotGrowth(r.At, r.Slots)
	}
	if r.Checkpointer != nil {
		r.Checkpoints = d.checkpointWindow(r.At, *r.Checkpointer, t.CheckpointWindow)
	}
	if !r.Failed(CheckDeadlocks) {
		r.Deadlocks = d.deadlockWindow(r.At, r.DeadlockStats, t.DeadlockWindow)
	}
	for i := range r.Slots {
		if r.WALRate != nil {
			r.Slots[i].SecondsToExhaustion = slotExhaustion(r.Slots[i].SafeWALSize, *r.WALRate)
		}
	}
	for _, sp := range d.standbys {
		if ctx.Err() != nil {
			r.Unavailable = append(r.Unavailable, Unavailable{Check: CheckStandbyStatus + " " + sp.name, Status: "skipped: findings budget exhausted", TimedOut: true, Err: ctx.Err()})
			continue
		}
		res := d.standbyStatus(ctx, sp)
		r.Timings[res.Name] = res.Took
		if res.Err != nil {
			r.Unavailable = append(r.Unavailable, unavailable(res.Name, probe{Err: res.Err, TimedOut: res.TimedOut, LockedBy: res.LockedBy}))
			continue
		}
		for _, row := range res.Rows {
			row.PrimaryLagBytes = primaryLag(primary, row)
			r.Standbys = append(r.Standbys, row)
		}
		if ctx.Err() != nil {
			continue
		}
		conf := d.standbyConflicts(ctx, sp)
		r.Timings[conf.Name] = conf.Took
		if conf.Err != nil {
			r.Unavailable = append(r.Unavailable, unavailable(conf.Name, probe{Err: conf.Err, TimedOut: conf.TimedOut, LockedBy: conf.LockedBy}))
		} else if w := d.conflictWindow(sp.name, r.At, conf.Rows, t.StandbyConflictWindow); w != nil {
			r.StandbyConflicts = append(r.StandbyConflicts, *w)
		}
	}
	r.Took = time.Since(start)
	return r
}

// slotGrowthSpan is the window a slot's retained WAL growth is measured
// over: from the last span to twice the span, and at least slotGrowthMin,
// so one burst of WAL between two rounds a few seconds apart is not taken
// for the trend.
const (
	slotGrowthSpan = 5 * time.Minute
	slotGrowthMin  = time.Minute
)

// slotGrowth records each slot's retained WAL read at now and sets
// RetainedGrowth from the start of its window, once that is a minute old. A slot whose retained WAL
// shrank (its consumer caught up) starts a new window; slots no longer
// seen are forgotten.
func (d *Diagnostics) slotGrowth(now time.Time, slots []Slot) {
	d.mu.Lock()
	defer d.mu.Unlock()
	windows := make(map[string]*counterWindow[int64], len(slots))
	for i, s := range slots {
		w := d.slotWindows[s.SlotName]
		if w == nil {
			w = &counterWindow[int64]{}
		}
		windows[s.SlotName] = w
		from, ok := w.advance(now, s.RetainedBytes, slotGrowthSpan, func(a, b int64) bool { return b < a })
		if !ok || now.Sub(from.at) < slotGrowthMin {
			continue
		}
		span := now.Sub(from.at).Seconds()
		rate := float64(s.RetainedBytes-from.v) / span
		slots[i].RetainedGrowth, slots[i].GrowthSeconds = &rate, &span
	}
	d.slotWindows = windows
}

// xminKey identifies a holder of the xmin horizon and the xmin it holds.
type xminKey struct{ kind, holder, xmin string }

// ageXmin gives the holders that have no transaction age (slots and
// standby feedback) an age from when a round first saw them hold that
// xmin, so a standby's long query that stops VACUUM is found by age, not
// only by XID count. Holders no longer seen are forgotten.
func (d *Diagnostics) ageXmin(at time.Time, holders []XminHolder) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := make(map[xminKey]time.Time, len(holders))
	for i, h := range holders {
		if h.AgeSeconds != nil {
			continue
		}
		k := xminKey{h.Kind, h.Holder, h.Xmin}
		first, ok := d.xminSeen[k]
		if !ok {
			first = at
		}
		seen[k] = first
		age := at.Sub(first).Seconds()
		holders[i].AgeSeconds = &age
		holders[i].FirstSeen = &first
	}
	d.xminSeen = seen
}

// primaryLag is the primary's position minus the standby's replay position,
// or nil when the round has no primary position or the standby replayed
// nothing yet.
func primaryLag(primary *WALPoint, s StandbyState) *int64 {
	if primary == nil || primary.InRecovery || !s.InRecovery {
		return nil
	}
	replay, err := parseLSN(s.ReplayLSN)
	if err != nil {
		return nil
	}
	lag := max(primary.LSNBytes-replay, 0)
	return &lag
}

// rateSince returns a WAL rate ending at p: the sampler's when it is fresh,
// else from the last remembered position if it is between half a sample
// window and five minutes old (then p is remembered), else the last rate if
// the remembered position is younger than half a window.
func (d *Diagnostics) rateSince(p WALPoint) (float64, bool) {
	d.mu.Lock()
	walRate, last, lastRate := d.walRate, d.lastWAL, d.lastRate
	d.mu.Unlock()
	if walRate != nil {
		if rate, ok := walRate(); ok {
			return rate, true
		}
	}
	if last != nil && p.LSNBytes >= last.LSNBytes {
		age := p.SampledAt.Sub(last.SampledAt)
		switch {
		case age >= d.cfg.WALSampleWindow/2 && age <= 5*time.Minute:
			rate := WALRate(*last, p)
			d.rememberWAL(p, rate, true)
			return rate, true
		case age < d.cfg.WALSampleWindow/2 && lastRate != nil:
			// Rounds in quick succession: keep the older anchor so the next
			// window is long enough, and reuse the last rate.
			return *lastRate, true
		}
	}
	return 0, false
}

// rememberWAL keeps the latest WAL position and rate for the next round and
// for panels (slot time-to-exhaustion).
func (d *Diagnostics) rememberWAL(p WALPoint, rate float64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastWAL = &p
	if ok {
		d.lastRate = &rate
	}
}

// knownWALRate is the most recent WAL rate known to this Diagnostics (the
// sampler's, else the last round's), or 0.
func (d *Diagnostics) knownWALRate() float64 {
	d.mu.Lock()
	walRate, rate := d.walRate, d.lastRate
	d.mu.Unlock()
	if walRate != nil {
		if r, ok := walRate(); ok {
			return r
		}
	}
	if rate != nil {
		return *rate
	}
	return 0
}

func probeOf(err error) probe {
	p := probe{Err: err}
	classify(&p)
	return p
}

func unavailable(check string, p probe) Unavailable {
	return Unavailable{Check: check, Status: statusText(p.Err, p.TimedOut, p.LockedBy), TimedOut: p.TimedOut, LockedBy: p.LockedBy, Err: p.Err}
}
