package diagnostics

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// PanelResult is a Result with its rows untyped, for code that walks the
// whole catalog (capturing evidence, the catalog test).
type PanelResult = Result[any]

func untyped[T any](r Result[T]) PanelResult {
	out := PanelResult{Name: r.Name, SQL: r.SQL, Err: r.Err, TimedOut: r.TimedOut, LockedBy: r.LockedBy, Took: r.Took}
	for _, row := range r.Rows {
		out.Rows = append(out.Rows, row)
	}
	return out
}

// RunCatalog runs every query of the catalog once, as panels, in catalog
// order (standby_status once per configured standby, or on this server when
// there is none, where it reports in_recovery false).
func (d *Diagnostics) RunCatalog(ctx context.Context) []PanelResult {
	var out []PanelResult
	for _, c := range checks {
		if c.Name != CheckStandbyStatus {
			out = append(out, c.panel(d, ctx))
			continue
		}
		if len(d.standbys) == 0 {
			out = append(out, untyped(d.standbyStatus(ctx, standbyPool{name: "self", pool: d.pool})))
		}
		for _, r := range d.StandbyStatus(ctx) {
			out = append(out, untyped(r))
		}
	}
	return out
}

// Panel returns the latest result of one catalog check by name, shared by
// every caller: the query runs at most once per Config.PanelMaxAge however
// many people watch the panel, and Result.At says how old what is served
// is. No caller waits for it but the first: a result older than
// PanelMaxAge is served while the next read runs for the callers after it
// (Cache.Stale), so a panel answers at once however long its query takes
// in a lock storm. A check that scans the whole catalog (SlowChecks) runs
// at most once per Config.SlowInterval. The panels of the runbook's
// blocking step that the shared findings round (LatestRound) reads, the
// blocking tree first, are that round's (fromRound): the overview and the
// findings already pay for it, and a viewer of the step then costs one
// round per PanelMaxAge, not a round and a query of each panel. standby_status merges the rows
// of every configured standby (and reports the first failure). ok is false
// for an unknown name.
func (d *Diagnostics) Panel(ctx context.Context, name string) (PanelResult, bool) {
	c, ok := d.panels[name]
	if !ok {
		return PanelResult{}, false
	}
	r, err := c.Stale(ctx, 0)
	if err != nil { // ctx ended while the shared query ran; it goes on for the next caller
		return PanelResult{Name: name, SQL: d.SQL(name), Err: err, TimedOut: true, At: d.now()}, true
	}
	return r, true
}

// panelLoadTimeout bounds one shared panel load, which runs detached from
// the callers that wait for it.
const panelLoadTimeout = 15 * time.Second

// newPanelCaches makes the shared result of every check of the catalog.
func (d *Diagnostics) newPanelCaches() map[string]*Cache[PanelResult] {
	out := make(map[string]*Cache[PanelResult], len(checks))
	for _, c := range checks {
		load := func(ctx context.Context) (PanelResult, error) {
			ctx, cancel := context.WithTimeout(ctx, panelLoadTimeout)
			defer cancel()
			start := d.now()
			r := c.panel(d, ctx)
			if r.At.IsZero() {
				r.At = start
			}
			return r, nil
		}
		if fromRound(c) {
			load = func(ctx context.Context) (PanelResult, error) { return d.panelFromRound(ctx, c), nil }
		}
		maxAge := d.cfg.PanelMaxAge
		if c.slow {
			maxAge = max(maxAge, d.cfg.SlowInterval)
		}
		out[c.Name] = NewCache(load, CacheConfig{MaxAge: maxAge, NowFunc: d.cfg.NowFunc})
	}
	return out
}

// fromRound says whether check c's panel is served from the shared
// findings round: the checks of the runbook's blocking step that every
// round reads. The blocking tree is the costliest read of a lock storm,
// and the round reads it anyway; the step's other panels it reads too come
// with it, so fifty viewers of the step cost one round per PanelMaxAge.
func fromRound(c Check) bool {
	return c.round != nil && c.round.rows != nil && !c.slow &&
		(c.Step == StepBlocking || slices.Contains(c.AlsoSteps, StepBlocking))
}

// panelFromRound is check c's panel as the shared findings round read it,
// a round at most Config.PanelMaxAge old.
func (d *Diagnostics) panelFromRound(ctx context.Context, c Check) PanelResult {
	ctx, cancel := context.WithTimeout(ctx, panelLoadTimeout)
	defer cancel()
	r := PanelResult{Name: c.Name, SQL: d.SQL(c.Name)}
	round, err := d.LatestRound(ctx, d.cfg.PanelMaxAge)
	if err != nil {
		r.Err, r.TimedOut, r.At = err, errors.Is(err, context.DeadlineExceeded), d.now()
		return r
	}
	r.At, r.Took = round.At, round.Timings[c.Name]
	for _, u := range round.Unavailable {
		if name, _, _ := strings.Cut(u.Check, " "); name == c.Name || name == CheckServerInfo || name == "connect" {
			r.Err, r.TimedOut, r.LockedBy = u.Err, u.TimedOut, u.LockedBy
			if r.Err == nil {
				r.Err = errors.New(u.Status)
			}
			return r
		}
	}
	r.Rows = c.round.rows(round)
	return r
}
