package web

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// auditLog serves GET /audit: the chain's verification at the top, then a
// filtered keyset page of events. A failed verification read shows in the
// chain box; the list still renders.
func (s *Server) auditLog(c echo.Context) error {
	f, err := parseAuditFilter(paramsOf(c))
	if err != nil {
		return err
	}
	ctx, cancel := readContext(c)
	defer cancel()
	events, err := audit.List(ctx, s.cfg.Pool, f.Params)
	if err != nil {
		return err
	}
	// The walk reads the whole chain, so it runs on the newest page only,
	// not on every step back through the history.
	chain := views.AuditChain{Sev: "info", Message: "The chain is verified on the newest page of the log."}
	if f.Params.BeforeID == 0 {
		verify, verr := audit.Verify(ctx, s.cfg.Pool)
		chain = auditChainModel(verify, verr)
	}
	m := auditModel(events, f, chain, time.Now())
	return s.render(c, page{Title: "Audit log", Nav: "audit", Model: m, Body: views.AuditBody(m)})
}

// auditChainModel says whether the chain verified.
func auditChainModel(r audit.VerifyResult, err error) views.AuditChain {
	ch := views.AuditChain{OK: err == nil && r.OK, Checked: humanize.Int(int64(r.Checked))}
	switch {
	case err != nil:
		ch.Sev = "warning"
		ch.Message = "The chain could not be verified: " + err.Error() + ". Reload to try again."
	case !r.OK:
		ch.Sev = "critical"
		ch.Message = fmt.Sprintf("Chain broken after %s events: %s", ch.Checked, r.Reason)
		if r.BrokenAt != nil {
			ch.Message += fmt.Sprintf(" (first event that does not fit: %d)", *r.BrokenAt)
		}
		ch.Message += ". The audit trail was altered outside the console; preserve the database for investigation."
	default:
		ch.Sev = "ok"
	}
	return ch
}

// auditOutcomeSev is the badge of an outcome.
func auditOutcomeSev(o audit.Outcome) string {
	switch o {
	case audit.OutcomeSucceeded:
		return "ok"
	case audit.OutcomeFailed:
		return "critical"
	}
	return "warning"
}

// auditJSON pretty-prints a JSON object, or "" when it is empty.
func auditJSON(raw json.RawMessage) string {
	switch string(raw) {
	case "", "null", "{}", "[]":
		return ""
	}
	return prettyJSON(raw)
}

// auditModel maps a page of events.
func auditModel(events []audit.Event, f auditListFilter, chain views.AuditChain, now time.Time) views.AuditPage {
	m := views.AuditPage{Chain: chain, Filter: f.Form, Filtered: len(f.query()) > 0 || f.Params.BeforeID > 0, Events: []views.AuditRow{}}
	for _, e := range events {
		row := views.AuditRow{
			ID: e.ID, At: age(e.At, now), Actor: e.Actor, Role: e.Role, Action: e.Action, Target: e.Target,
			Outcome: string(e.Outcome), OutcomeSev: auditOutcomeSev(e.Outcome), Reason: e.Reason, Error: e.Error,
			Params: auditJSON(e.Params), Preview: auditJSON(e.Preview), Result: auditJSON(e.Result),
		}
		if e.IncidentID != nil {
			row.Incident = itoa64(*e.IncidentID)
			row.IncidentHref = "/incidents/" + row.Incident
		}
		m.Events = append(m.Events, row)
	}
	if len(events) > 0 {
		m.OlderHref = olderHref("/audit", f.query(), events[len(events)-1].ID, len(events), f.Params.Limit)
	}
	if f.Params.BeforeID > 0 {
		m.FirstHref = listHref("/audit", f.query())
	}
	return m
}
