package diagnostics

import "context"

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

// Panel runs one query of the catalog by name, for pages that load each
// panel on its own. standby_status merges the rows of every configured
// standby (and reports the first failure). ok is false for an unknown name.
func (d *Diagnostics) Panel(ctx context.Context, name string) (PanelResult, bool) {
	c, ok := CheckNamed(name)
	if !ok {
		return PanelResult{}, false
	}
	return c.panel(d, ctx), true
}
