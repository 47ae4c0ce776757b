package diagnostics

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The console reads the database on two clocks. The fast one is the shared
// round (LatestRound, every few seconds while someone looks): activity,
// locks, replication, queues, whose cost follows the incident. The slow one
// (Config.SlowInterval) reads the checks that scan the whole catalog, whose
// cost follows the schema: on a database of 20,000 tables they are most of
// a round's time and tell nothing new from one second to the next. The
// repeat blockers, counted over the last hour of recorded lock episodes,
// change as slowly and run there too. Rounds in
// between reuse the slow clock's last read, and say how old it is
// (Round.SlowAt).

// Config returns the configuration d runs with, defaults filled in.
func (d *Diagnostics) Config() Config { return d.cfg }

// SlowChecks names the checks on the slow clock, in catalog order.
func SlowChecks() []string {
	var out []string
	for _, c := range checks {
		if c.slow {
			out = append(out, c.Name)
		}
	}
	return out
}

// SlowAge is how old the round's catalog-wide rows were when the round
// started; zero when the round read them itself.
func (r Round) SlowAge() time.Duration {
	if r.SlowAt.IsZero() {
		return 0
	}
	return max(r.At.Sub(r.SlowAt), 0)
}

// newRoundState is what the checks of round r share, on a server of
// version with thresholds t.
func newRoundState(r *Round, version int, t Thresholds) *roundState {
	return &roundState{round: r, version: version, thresholds: t,
		queueParams: QueueParams{DeadWindow: t.DeadLetterWindow, CountCap: max(DefaultCountCap, t.QueueBacklogReady, t.DeadLetters)}}
}

// readChecks reads, in sess and catalog order, each check of a round that
// want keeps; a check that fails, or finds the budget (ctx) spent, is listed
// in Unavailable.
func (st *roundState) readChecks(ctx context.Context, sess *session, want func(Check) bool) {
	r := st.round
	for _, c := range checks {
		if c.round == nil || !want(c) {
			continue
		}
		if ctx.Err() != nil {
			r.Unavailable = append(r.Unavailable, Unavailable{Check: c.Name, Status: "skipped: findings budget exhausted", TimedOut: true, Err: ctx.Err()})
			continue
		}
		p := sess.run(ctx, c.Name, c.tables, func(ctx context.Context, db DBTX) error { return c.round.read(ctx, db, st) })
		r.Timings[c.Name] = p.Took
		if p.Err != nil {
			r.Unavailable = append(r.Unavailable, unavailable(c.Name, p))
		}
	}
}

// slowRound reads the catalog-wide checks alone, in a REPEATABLE READ, READ
// ONLY transaction of their own within Config.SlowBudget: the slow clock's
// load. When the round cannot start, each of them is listed in Unavailable
// with the reason.
func (d *Diagnostics) slowRound(ctx context.Context) (Round, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.SlowBudget)
	defer cancel()
	r := Round{At: d.now().UTC(), Timings: map[string]time.Duration{}}
	r.SlowAt = r.At
	fail := func(p probe) (Round, error) {
		for _, name := range SlowChecks() {
			r.Unavailable = append(r.Unavailable, unavailable(name, p))
		}
		r.Took = time.Since(start)
		return r, errRoundFailed
	}
	info, err := d.ServerInfo(ctx)
	if err != nil {
		return fail(probeOf(err))
	}
	s, err := d.begin(ctx, d.pool, pgx.RepeatableRead)
	if err != nil {
		return fail(probeOf(err))
	}
	defer s.end()
	newRoundState(&r, info.VersionNum, d.Thresholds()).readChecks(ctx, s, func(c Check) bool { return c.slow })
	r.Took = time.Since(start)
	return r, nil
}

// withSlow puts the slow clock's read of the catalog-wide checks into r,
// which read none of them: their rows, timings and failures, and when they
// were read.
func withSlow(r *Round, slow Round) {
	r.SlowAt = slow.At
	for _, c := range checks {
		if !c.slow || c.round == nil {
			continue
		}
		c.round.keep(slow, r)
		if took, ok := slow.Timings[c.Name]; ok {
			r.Timings[c.Name] = took
		}
	}
	r.Unavailable = append(r.Unavailable, slow.Unavailable...)
}
